//! `diffuse-embedded`: the embedded backend, which executes launch plans in-process on a
//! pool of worker processors.
//!
//! Stores live in host buffers attached to the IR stores themselves (freed when the last
//! reference goes) and, when the process has a GPU (`diffuse-device`: CUDA, or the simulated
//! GPU with `DIFFUSE_DEVICE=sim`), in device copies with per-store validity (`residency.rs`).
//! A plan's point tasks run in parallel, each on the worker thread of the processor its
//! placement names (see `execute.rs`), or, placed on the GPU, as kernel launches enqueued on
//! the device (`gpu.rs`); `Reduce` arguments get private per-point accumulators that are
//! folded into the store in point order afterwards, so results never depend on thread timing.
#![warn(missing_docs)]
// Backends return `diffuse_ir::IrError`, which carries shapes inline by design (see the IR).
#![allow(clippy::result_large_err)]

mod capabilities;
mod execute;
mod gpu;
mod residency;

pub use capabilities::CAPABILITIES;

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use diffuse_backend::{
    check_host_copy, Backend, BackendStats, Capabilities, LaunchPlan, MachineShape,
};
use diffuse_device::{Device, DeviceChoice};
use diffuse_ir::{with_element_type, HostBlock, HostData, IrError, Rect, StoreRef};
use residency::{Gpu, StoreMemory, Use};

use diffuse_backend::memory::{
    available_memory, for_each_rect_row, BufferCache, FirstUse, HostBuffer, MemoryStats,
    OutOfMemory,
};

/// Settings of the embedded backend.
#[derive(Clone, Debug)]
pub struct EmbeddedConfig {
    /// Number of worker processors; `None` means one per available core.
    pub procs: Option<usize>,
    /// Most bytes of freed store buffers kept for reuse by later stores of the same size.
    pub buffer_cache_bytes: usize,
    /// Nodes the processors are grouped into (`procs` must be a multiple): the machine a
    /// mapper sees is `nodes x (procs / nodes)` CPUs (and as many OpenMP processors, run by
    /// the same workers), plus one GPU per node when the process has a usable GPU.
    pub nodes: usize,
    /// Working-set bytes of one strip when a fused element-wise task runs strip by strip
    /// (default 1 MiB: the strip's rows of every store the task touches stay in a core's L2
    /// or nearby cache; strips never go below 2048 elements, to amortize kernel calls).
    pub strip_bytes: usize,
    /// A launch that reaches at most this many bytes of its stores in all (the regions its
    /// arguments' partitions reach), placed by default (no mapper), runs on the submitting
    /// thread: waking the workers costs more than it saves (default 256 KiB).
    pub inline_bytes: usize,
    /// Most bytes store data, cached buffers and point-local temporaries may take; an
    /// allocation past it fails with `IrError::OutOfMemory` (after the buffer cache is
    /// released). `None`: the memory available when the backend starts (`MemAvailable`:
    /// the physical memory less what other processes and the kernel hold), so that a run
    /// past it fails with an error instead of being killed by the kernel.
    pub memory_limit: Option<usize>,
    /// The GPU the backend offers mappers (one per node, placed points launch there):
    /// `None` follows `DIFFUSE_DEVICE` (the CUDA GPU when the machine has one; `sim`: the
    /// simulated GPU; `none`: no GPU).
    pub device: Option<DeviceChoice>,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        EmbeddedConfig {
            procs: None,
            buffer_cache_bytes: 4 << 30,
            nodes: 1,
            strip_bytes: 1 << 20,
            inline_bytes: 256 << 10,
            memory_limit: None,
            device: None,
        }
    }
}

/// Worker threads the embedded backend starts at most per core: oversubscribing cores
/// emulates larger machines (several nodes, mappers' processor grids), but every launch
/// splits into a point per processor, and past some tens of threads per core a run spends
/// its time switching between them (4096 processors on 2 cores: a 64 x 64 stencil takes 28 s
/// per 3 iterations, 100000 never finishes).
pub const PROCS_PER_CORE: usize = 64;

/// The most worker processors the embedded backend starts on this machine:
/// [`PROCS_PER_CORE`] per core the process may use.
pub fn max_procs() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.saturating_mul(PROCS_PER_CORE)
}

/// A processor count past [`max_procs`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{setting} {procs} is more than the {limit} processors the embedded backend runs on this \
     machine ({PROCS_PER_CORE} per core on {} cores)",
    limit / PROCS_PER_CORE
)]
pub struct TooManyProcs {
    /// Where the count came from (`--procs`, `DIFFUSE_PROCS`, ...).
    pub setting: String,
    /// The count asked for.
    pub procs: usize,
    /// [`max_procs`].
    pub limit: usize,
}

/// Checks a processor count against [`max_procs`]; `setting` names where it came from in
/// the error (a flag or an environment variable), so front ends report it as the user wrote
/// it.
pub fn check_procs(setting: &str, procs: usize) -> Result<(), TooManyProcs> {
    let limit = max_procs();
    if procs > limit {
        return Err(TooManyProcs {
            setting: setting.to_string(),
            procs,
            limit,
        });
    }
    Ok(())
}

/// The typed error for `store`, whose buffer could not be had.
fn out_of_memory(store: &StoreRef, e: OutOfMemory) -> IrError {
    IrError::OutOfMemory {
        backend: "embedded".into(),
        store: store.id(),
        shape: store.shape(),
        dtype: store.dtype(),
        bytes: e.bytes,
        reason: if e.limit == usize::MAX {
            format!("the allocator refused ({} bytes in use)", e.in_use)
        } else {
            format!("{} bytes are in use of a {}-byte limit", e.in_use, e.limit)
        },
    }
}

/// The in-process backend.
pub struct EmbeddedBackend {
    pool: rayon::ThreadPool,
    procs: usize,
    nodes: usize,
    stats: Arc<MemoryStats>,
    cache: Arc<BufferCache>,
    strip_bytes: usize,
    inline_bytes: usize,
    /// The process's GPU, when it has one (points placed on GPUs launch there).
    gpu: Option<Gpu>,
    strip_points: AtomicU64,
    segment_points: AtomicU64,
    compiled_points: AtomicU64,
    gpu_points: AtomicU64,
    tasks_executed: AtomicU64,
    points_executed: AtomicU64,
    /// Serializes plans and host copies submitted from different application threads.
    order: Mutex<()>,
    /// The floating-point exceptions point tasks raised, until the application takes them.
    fp: diffuse_backend::point::fp::FpRecorder,
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
        check_procs("the processor count", procs).map_err(|e| IrError::Backend {
            backend: "embedded".into(),
            message: e.to_string(),
        })?;
        if config.nodes == 0 || procs % config.nodes != 0 {
            return Err(IrError::Backend {
                backend: "embedded".into(),
                message: format!(
                    "{procs} processors cannot be grouped into {} nodes of equal size",
                    config.nodes
                ),
            });
        }
        let choice = match config.device {
            Some(choice) => choice,
            None => DeviceChoice::from_env().map_err(|e| IrError::Backend {
                backend: "embedded".into(),
                message: e.to_string(),
            })?,
        };
        let device = diffuse_device::open(&choice).map_err(|e| IrError::Backend {
            backend: "embedded".into(),
            message: format!("cannot open the device {choice:?}: {e}"),
        })?;
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
            nodes: config.nodes,
            stats: Arc::new(MemoryStats::with_limit(
                config
                    .memory_limit
                    .or_else(available_memory)
                    .unwrap_or(usize::MAX),
            )),
            cache: Arc::new(BufferCache::new(config.buffer_cache_bytes)),
            strip_bytes: config.strip_bytes.max(1),
            inline_bytes: config.inline_bytes,
            gpu: device.map(Gpu::new),
            strip_points: AtomicU64::new(0),
            segment_points: AtomicU64::new(0),
            compiled_points: AtomicU64::new(0),
            gpu_points: AtomicU64::new(0),
            tasks_executed: AtomicU64::new(0),
            points_executed: AtomicU64::new(0),
            order: Mutex::new(()),
            fp: Default::default(),
        })
    }

    /// Processors per node.
    fn procs_per_node(&self) -> usize {
        (self.procs / self.nodes.max(1)).max(1)
    }

    /// The memory of `store`, its host buffer allocated on first use; zero-filled unless
    /// that first use overwrites the whole store.
    fn memory<'s>(
        &self,
        store: &'s StoreRef,
        first_use: FirstUse,
    ) -> Result<&'s Arc<StoreMemory>, IrError> {
        let len = store.shape().volume().max(0) as usize;
        store.try_allocation(
            || {
                let host =
                    HostBuffer::for_store(store.dtype(), len, first_use, &self.stats, &self.cache)
                        .map_err(|e| out_of_memory(store, e))?;
                let device = self.gpu.as_ref().map(|g| g.device().clone());
                Ok(Arc::new(StoreMemory::new(host, device)))
            },
            |e| e,
        )
    }

    /// Copies the bytes of `rect` of `store` row by row from the store's host buffer to
    /// `out`, under the order lock.
    ///
    /// # Safety
    /// `rect` lies inside the store and `out` is valid for writes of its bytes.
    unsafe fn copy_rect(&self, store: &StoreRef, rect: &Rect, out: *mut u8) -> Result<(), IrError> {
        let _order = self.lock();
        let buf = self.host_memory(store, FirstUse::Reads, Use::READ)?.host();
        let strides = store.shape().row_major_strides();
        let size = store.dtype().size_bytes();
        let base = buf.as_ptr();
        let mut at = 0;
        for_each_rect_row(rect, &strides, |start, _, len| {
            let bytes = len * size;
            // SAFETY: the row lies inside the store's buffer and `out`'s bytes (the
            // caller's contract), and the order lock excludes concurrent writers.
            unsafe { std::ptr::copy_nonoverlapping(base.add(start * size), out.add(at), bytes) };
            at += bytes;
        });
        Ok(())
    }

    /// The memory of `store`, its host buffer current for a host copy that uses it as `how`
    /// says (downloaded from the GPU first when only the GPU holds its values).
    fn host_memory<'s>(
        &self,
        store: &'s StoreRef,
        first_use: FirstUse,
        how: Use,
    ) -> Result<&'s Arc<StoreMemory>, IrError> {
        let memory = self.memory(store, first_use)?;
        if let Some(gpu) = &self.gpu {
            gpu.to_host(&[(store, memory, how)])?;
        }
        Ok(memory)
    }

    /// The device the backend launches GPU points on, if it has one.
    pub fn device(&self) -> Option<&Arc<dyn Device>> {
        self.gpu.as_ref().map(Gpu::device)
    }

    /// Sets the memory limit (see [`EmbeddedConfig::memory_limit`]) from now on.
    pub fn set_memory_limit(&self, bytes: usize) {
        self.stats.set_limit(bytes);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.order.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Backend for EmbeddedBackend {
    fn name(&self) -> &str {
        "embedded"
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn machine(&self) -> MachineShape {
        let per_node = self.procs_per_node();
        MachineShape {
            nodes: self.nodes,
            cpus_per_node: per_node,
            gpus_per_node: usize::from(self.gpu.is_some()),
            omps_per_node: per_node,
        }
    }

    fn execute(&self, plan: &LaunchPlan) -> Result<(), IrError> {
        let _order = self.lock();
        execute::run(self, plan)?;
        self.tasks_executed.fetch_add(1, Ordering::Relaxed);
        self.points_executed.fetch_add(
            plan.template().launch_domain().volume() as u64,
            Ordering::Relaxed,
        );
        Ok(())
    }

    fn flush(&self) -> Result<(), IrError> {
        // Host work ran when it was handed over; GPU launches may still be running.
        let _order = self.lock();
        self.gpu.as_ref().map_or(Ok(()), Gpu::flush)
    }

    fn host_copies_follow_launches(&self) -> bool {
        // Host points run before `execute` returns; host copies take the order lock and
        // download from the GPU (after its launches) what only the GPU holds.
        true
    }

    fn stats(&self) -> BackendStats {
        let device = self
            .gpu
            .as_ref()
            .map(|g| (g.device().counters(), g.syncs()))
            .unwrap_or_default();
        BackendStats {
            tasks_executed: self.tasks_executed.load(Ordering::Relaxed),
            points_executed: self.points_executed.load(Ordering::Relaxed),
            compiled_points: self.compiled_points.load(Ordering::Relaxed),
            gpu_points: self.gpu_points.load(Ordering::Relaxed),
            strip_points: self.strip_points.load(Ordering::Relaxed),
            segment_points: self.segment_points.load(Ordering::Relaxed),
            // Launches cost ~1 us here: nothing to trace.
            traced_launches: 0,
            store_bytes: self.stats.current_bytes() as u64,
            peak_store_bytes: self.stats.peak_bytes() as u64,
            cached_bytes: self.cache.cached_bytes() as u64,
            // One node: nothing moves between nodes.
            bytes_moved: 0,
            h2d_bytes: device.0.h2d_bytes,
            d2h_bytes: device.0.d2h_bytes,
            device_syncs: device.1,
            kernel_launches: device.0.launches,
        }
    }

    fn reset_peak_memory(&self) {
        self.stats.reset_peak();
    }

    fn take_fp_errors(&self) -> diffuse_backend::point::fp::FpErrors {
        self.fp.take()
    }

    fn attribute_fp_errors(&self, categories: diffuse_backend::point::fp::FpFlags) {
        self.fp.attribute(categories);
    }

    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError> {
        check_host_copy(store, &rect, None)?;
        Ok(with_element_type!(store.dtype(), T => {
            let len = rect.volume().max(0) as usize;
            let mut out: Vec<T> = Vec::new();
            out.try_reserve_exact(len).map_err(|_| {
                out_of_memory(store, OutOfMemory {
                    bytes: len.saturating_mul(std::mem::size_of::<T>()),
                    in_use: self.stats.current_bytes() + self.cache.cached_bytes(),
                    limit: usize::MAX,
                })
            })?;
            // SAFETY: the spare capacity holds the `len` elements of `rect`, which
            // `copy_rect` fills with elements of the store (of type `T`) before `set_len`
            // exposes them.
            unsafe {
                self.copy_rect(store, &rect, out.as_mut_ptr().cast::<u8>())?;
                out.set_len(len);
            }
            HostData::from_vec(out)
        }))
    }

    fn read_into(&self, store: &StoreRef, rect: Rect, out: &mut [u8]) -> Result<(), IrError> {
        check_host_copy(store, &rect, None)?;
        let expected = rect.volume().max(0) as usize * store.dtype().size_bytes();
        if out.len() != expected {
            return Err(IrError::HostData {
                store: store.id(),
                what: format!(
                    "a host buffer of {} bytes given for box {rect} ({expected} bytes)",
                    out.len()
                ),
            });
        }
        // SAFETY: `out` holds exactly the bytes of `rect` (checked above).
        unsafe { self.copy_rect(store, &rect, out.as_mut_ptr()) }
    }

    fn take_host(&self, store: &StoreRef) -> Result<Option<HostBlock>, IrError> {
        let _order = self.lock();
        // The new holder reads and writes the buffer: no transfer may still use it.
        let memory = self.host_memory(store, FirstUse::Reads, Use::UPDATE)?;
        let host = memory.host();
        let Some(ptr) = NonNull::new(host.as_ptr()).filter(|_| !host.is_empty()) else {
            return Ok(None);
        };
        let bytes = host.len() * host.dtype().size_bytes();
        // SAFETY: the buffer holds the store's `bytes` bytes, aligned for its dtype, and
        // lives as long as the store's memory, which the block owns a share of; the store
        // is used no more (the caller's contract) and no plan still uses it (the runtime
        // ran them all), so the block's holder alone touches the bytes.
        Ok(Some(unsafe {
            HostBlock::new(ptr, bytes, host.dtype(), Box::new(Arc::clone(memory)))
        }))
    }

    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError> {
        check_host_copy(store, &rect, Some(data.len()))?;
        let _order = self.lock();
        let first_use = if rect == store.bounds() {
            FirstUse::Overwrites
        } else {
            FirstUse::Reads
        };
        let how = Use {
            reads: first_use == FirstUse::Reads,
            writes: true,
        };
        let buf = self.host_memory(store, first_use, how)?.host();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processor_counts_past_the_machine_are_refused_by_name() {
        let limit = max_procs();
        assert!(check_procs("--procs", limit).is_ok());
        let e = check_procs("DIFFUSE_PROCS", limit + 1).unwrap_err();
        let message = e.to_string();
        assert!(
            message.starts_with(&format!("DIFFUSE_PROCS {} ", limit + 1))
                && message.contains(&format!("the {limit} processors")),
            "{message}"
        );
        let started = EmbeddedBackend::new(EmbeddedConfig {
            procs: Some(usize::MAX),
            ..Default::default()
        });
        let message = started.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("processor count"), "{message}");
    }
}
