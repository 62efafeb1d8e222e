//! An NVIDIA GPU through the CUDA driver API, opened at run time through `cudarc`
//! (`libcuda.so` is loaded on first use, so builds and machines without CUDA never need it).
//!
//! [`CudaDevice`] is device 0 with its primary context (retained for the life of the
//! process) and one non-blocking stream. Allocations are stream-ordered from the device's
//! default memory pool, which keeps freed memory for reuse instead of returning it to the
//! driver; copies and launches are enqueued on the stream; events are CUDA events recorded on
//! it. Every call makes the context current on the calling thread first (callers' threads
//! vary), and no call panics: a driver function missing from an old driver is an error.
//!
//! [`mlir_runtime`] are the functions MLIR's GPU lowering calls from a compiled
//! kernel's host code; [`Device::launch`] runs that host code with the device's stream as the
//! one those functions launch on.
//!
//! [`DeviceCounters::syncs`](crate::DeviceCounters::syncs) counts every `synchronize` and
//! every `wait` on an event not yet complete.

mod runtime;

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUcontext, CUevent, CUstream};

pub use runtime::mlir_runtime;

use crate::counters::{Counters, Direction};
use crate::{
    panic_message, Copy2d, Device, DeviceCounters, DeviceError, DeviceInfo, DeviceKind, DevicePtr,
    Event, LaunchWork, Place,
};

/// The process's GPU: device 0 and its retained primary context, opened once.
struct Gpu {
    device: sys::CUdevice,
    context: CUcontext,
    info: DeviceInfo,
}

// SAFETY: a CUDA device ordinal and context handle may be used from any thread (the context
// is made current per thread before use).
unsafe impl Send for Gpu {}
unsafe impl Sync for Gpu {}

impl Gpu {
    /// Makes the context current on this thread.
    fn bind(&self) -> Result<(), String> {
        // SAFETY: the context is the retained primary context, never released.
        unsafe { result::ctx::set_current(self.context) }
            .map_err(|e| format!("cuCtxSetCurrent failed: {}", describe(e)))
    }
}

/// The process's GPU, opened on first use; `Err` says why there is none (no driver
/// library, no device, initialization failed). Never panics.
fn gpu() -> Result<&'static Gpu, String> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    GPU.get_or_init(|| {
        catch_unwind(open_gpu).unwrap_or_else(|panic| {
            Err(format!(
                "the CUDA driver failed while opening the device: {}",
                panic_message(&*panic)
            ))
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn open_gpu() -> Result<Gpu, String> {
    // SAFETY: only probes whether the driver library can be opened.
    if !unsafe { sys::is_culib_present() } {
        return Err("no CUDA driver library (libcuda.so) on this machine".into());
    }
    result::init().map_err(|e| format!("cuInit failed: {}", describe(e)))?;
    let count = result::device::get_count()
        .map_err(|e| format!("cuDeviceGetCount failed: {}", describe(e)))?;
    if count < 1 {
        return Err("the CUDA driver reports no device".into());
    }
    let device =
        result::device::get(0).map_err(|e| format!("cuDeviceGet failed: {}", describe(e)))?;
    let name = result::device::get_name(device).unwrap_or_else(|_| "unknown GPU".into());
    let attribute = |a| {
        // SAFETY: `device` came from `cuDeviceGet`.
        unsafe { result::device::get_attribute(device, a) }
            .map_err(|e| format!("cuDeviceGetAttribute failed: {}", describe(e)))
    };
    let major = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    // SAFETY: as above.
    let memory_bytes = unsafe { result::device::total_mem(device) }.unwrap_or(0);
    // SAFETY: as above; the primary context is retained for the life of the process.
    let context = unsafe { result::primary_ctx::retain(device) }
        .map_err(|e| format!("cuDevicePrimaryCtxRetain failed: {}", describe(e)))?;
    Ok(Gpu {
        device,
        context,
        info: DeviceInfo {
            name,
            kind: DeviceKind::Cuda,
            memory_bytes,
            chip: Some(format!("sm_{major}{minor}")),
        },
    })
}

/// How many CUDA GPUs this machine has: 0 without a driver, without a GPU, or when the
/// driver fails to start. Never panics.
pub fn device_count() -> usize {
    let count = || {
        // SAFETY: only probes whether the driver library can be opened.
        if !unsafe { sys::is_culib_present() } || result::init().is_err() {
            return 0;
        }
        result::device::get_count().map_or(0, |c| usize::try_from(c).unwrap_or(0))
    };
    catch_unwind(count).unwrap_or(0)
}

/// The LLVM NVPTX chip of this machine's GPU (`sm_90` for an H100), or `None` without one:
/// what kernels for it are compiled for.
pub fn chip() -> Option<String> {
    gpu().ok().and_then(|g| g.info.chip.clone())
}

/// Runs kernel host code (`work`) now on the calling thread, its kernels launched on
/// `stream`: a stream of the CUDA context current on this thread that the caller owns (a
/// Legion GPU task's, from Realm), for runtimes that manage their GPUs' contexts and streams
/// themselves. `workspace_bytes`: the device scratch buffers the kernels take (a GPU kernel's
/// workspaces), allocated in stream order before them and freed in stream order after them;
/// `work` gets their addresses. Nothing waits: the kernels complete later, in stream order.
/// The error is the first failure of a runtime function or of `work`.
///
/// # Safety
/// `stream` must be a live stream of the context current on this thread, and the memory the
/// kernels access must stay valid until they complete in stream order.
pub unsafe fn launch_on_stream(
    stream: *mut c_void,
    workspace_bytes: &[usize],
    work: impl FnOnce(&[DevicePtr]) -> Result<(), String>,
) -> Result<(), DeviceError> {
    guarded("launching GPU kernels on a task's stream", || {
        let stream: CUstream = stream.cast();
        let (total, offsets) = crate::workspace_layout(workspace_bytes);
        let base = if total > 0 {
            // SAFETY: the caller's stream, in the current context; used only by the
            // kernels enqueued on it below and freed on it after them.
            let base = unsafe { result::malloc_async(stream, total) }
                .map_err(|e| failed(format!("allocating {total} bytes of device workspace"), e))?;
            Some(base)
        } else {
            None
        };
        let parts: Vec<DevicePtr> = base
            .map(|b| offsets.iter().map(|&o| b + o as u64).collect())
            .unwrap_or_default();
        let outcome = runtime::launch(stream, || work(&parts)).map_err(DeviceError::Kernel);
        if let Some(base) = base {
            // SAFETY: allocated on `stream` above; freed after the kernels in stream order.
            if let Err(e) = unsafe { result::free_async(base, stream) } {
                tracing::warn!("freeing a device workspace failed: {}", describe(e));
            }
        }
        outcome
    })
}

/// Zeroes `rows` (each a device address and a length in bytes) in stream order on
/// `stream`, a stream of the CUDA context current on this thread that the caller owns (a
/// Legion GPU task's). Nothing waits.
///
/// # Safety
/// `stream` must be a live stream of the context current on this thread, and every row must
/// be device memory of that context that stays valid until the stream reaches the zeroing.
pub unsafe fn zero_on_stream(
    stream: *mut c_void,
    rows: &[(DevicePtr, usize)],
) -> Result<(), DeviceError> {
    guarded("zeroing device memory on a task's stream", || {
        let stream: CUstream = stream.cast();
        for &(row, bytes) in rows.iter().filter(|(_, bytes)| *bytes > 0) {
            // SAFETY: the caller's contract.
            unsafe { result::memset_d8_async(row, 0, bytes, stream) }
                .map_err(|e| failed(format!("zeroing {bytes} bytes of device memory"), e))?;
        }
        Ok(())
    })
}

/// A driver error as `NAME: description`.
fn describe(e: DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name}: {}", s.to_string_lossy()),
        Err(_) => name,
    }
}

/// The CUDA events a device has recorded and not yet destroyed.
#[derive(Debug, Default)]
struct Events {
    /// The sequence number of the last event recorded (events are numbered from 1).
    recorded: u64,
    /// Every event up to this one has completed.
    completed: u64,
    /// Events recorded after `completed`, by sequence number.
    pending: BTreeMap<u64, CUevent>,
    /// Completed events not yet destroyed because a caller is blocked on one of them.
    retired: Vec<CUevent>,
    /// Callers blocked in `cuEventSynchronize` now (without the lock).
    waiters: usize,
}

impl Events {
    /// Notes that every event up to `seq` has completed (the stream runs in order) and
    /// destroys their CUDA events once no caller is blocked on one.
    fn complete_through(&mut self, seq: u64) {
        self.completed = self.completed.max(seq);
        let later = self.pending.split_off(&(seq + 1));
        let done = std::mem::replace(&mut self.pending, later);
        self.retired.extend(done.into_values());
        if self.waiters > 0 {
            return;
        }
        for event in self.retired.drain(..) {
            // SAFETY: created by `cuEventCreate`, destroyed once (no longer in the table),
            // and no caller is blocked on it.
            if let Err(e) = unsafe { result::event::destroy(event) } {
                tracing::debug!("destroying a CUDA event failed: {}", describe(e));
            }
        }
    }
}

/// An NVIDIA GPU (see the module docs).
pub struct CudaDevice {
    gpu: &'static Gpu,
    stream: CUstream,
    events: Mutex<Events>,
    /// Live allocations and their sizes (for the counters).
    allocations: Mutex<HashMap<DevicePtr, usize>>,
    counters: Counters,
}

// SAFETY: the stream and the events are driver handles usable from any thread with the
// context current (every call binds it); the tables are behind mutexes.
unsafe impl Send for CudaDevice {}
unsafe impl Sync for CudaDevice {}

/// Locks a mutex whose data stays consistent even if a holder panicked.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `what` failed because of driver error `e`.
fn failed(what: impl Into<String>, e: DriverError) -> DeviceError {
    DeviceError::Failed {
        what: what.into(),
        reason: describe(e),
    }
}

impl CudaDevice {
    /// Opens device 0: its primary context, a non-blocking stream, and a default memory
    /// pool that keeps freed memory. [`DeviceError::Unavailable`] says why there is no GPU.
    pub fn open() -> Result<CudaDevice, DeviceError> {
        let gpu = gpu().map_err(DeviceError::Unavailable)?;
        guarded("opening the CUDA device", || {
            gpu.bind().map_err(DeviceError::Unavailable)?;
            // SAFETY: `gpu.device` came from `cuDeviceGet`; the threshold attribute takes a
            // u64.
            unsafe {
                let pool = result::device::get_default_mem_pool(gpu.device)
                    .map_err(|e| failed("getting the device's memory pool", e))?;
                let mut threshold = u64::MAX;
                result::mem_pool::set_attribute(
                    pool,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut threshold as *mut u64).cast::<c_void>(),
                )
                .map_err(|e| failed("keeping freed device memory in the pool", e))?;
            }
            let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
                .map_err(|e| failed("creating a CUDA stream", e))?;
            Ok(CudaDevice {
                gpu,
                stream,
                events: Mutex::new(Events::default()),
                allocations: Mutex::new(HashMap::new()),
                counters: Counters::default(),
            })
        })
    }

    /// Runs `body` with the context current on this thread, turning a panic (a driver
    /// function missing from an old driver) into an error.
    fn call<R>(
        &self,
        what: &str,
        body: impl FnOnce() -> Result<R, DeviceError>,
    ) -> Result<R, DeviceError> {
        guarded(what, || {
            self.gpu.bind().map_err(|reason| DeviceError::Failed {
                what: what.to_string(),
                reason,
            })?;
            body()
        })
    }

    /// Enqueues a copy of `bytes` bytes (nothing for none) by calling `copy`, and counts it.
    fn enqueue_copy(
        &self,
        bytes: usize,
        direction: Direction,
        copy: impl FnOnce() -> Result<(), DriverError>,
    ) -> Result<(), DeviceError> {
        if bytes == 0 {
            return Ok(());
        }
        let what = direction.copying(bytes);
        self.call(&what, || {
            copy().map_err(|e| failed(what.clone(), e))?;
            self.counters.copied(direction, bytes);
            Ok(())
        })
    }

    /// Whether `event` has completed; when `block`, waits for it first (without holding
    /// the event table, so other threads keep enqueueing meanwhile).
    fn settle(&self, event: Event, block: bool) -> Result<bool, DeviceError> {
        let what = format!("waiting for event {}", event.0);
        self.call(&what, || {
            let mut events = lock(&self.events);
            if event.0 <= events.completed {
                return Ok(true);
            }
            let Some(&handle) = events.pending.get(&event.0) else {
                return Err(DeviceError::Failed {
                    what: what.clone(),
                    reason: "the device never recorded it".into(),
                });
            };
            // SAFETY: `handle` is a live event of this device.
            let mut status = unsafe { result::event::query(handle) };
            if block && status.is_err_and(|e| e.0 == sys::cudaError_enum::CUDA_ERROR_NOT_READY) {
                self.counters.synced();
                // While this caller waits, no event is destroyed (see `complete_through`).
                events.waiters += 1;
                drop(events);
                // SAFETY: as above; the event outlives the wait.
                status = unsafe { result::event::synchronize(handle) };
                events = lock(&self.events);
                events.waiters -= 1;
            }
            match status {
                Ok(()) => {
                    events.complete_through(event.0);
                    Ok(true)
                }
                Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_NOT_READY => Ok(false),
                Err(e) => Err(DeviceError::Kernel(format!(
                    "work on the GPU failed: {}",
                    describe(e)
                ))),
            }
        })
    }
}

/// Runs `body`, turning a panic into a [`DeviceError::Failed`] about `what`.
fn guarded<R>(what: &str, body: impl FnOnce() -> Result<R, DeviceError>) -> Result<R, DeviceError> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        Err(DeviceError::Failed {
            what: what.to_string(),
            reason: format!("the CUDA driver failed: {}", panic_message(&*panic)),
        })
    })
}

impl fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaDevice")
            .field("info", &self.gpu.info)
            .field("counters", &self.counters.snapshot())
            .finish_non_exhaustive()
    }
}

impl Device for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.gpu.info
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr, DeviceError> {
        self.call("allocating device memory", || {
            // A zero-byte allocation is one byte, so that every allocation has an address.
            // SAFETY: the stream is this device's; the memory is used through this device.
            match unsafe { result::malloc_async(self.stream, bytes.max(1)) } {
                Ok(ptr) => {
                    lock(&self.allocations).insert(ptr, bytes);
                    self.counters.allocated(bytes);
                    Ok(ptr)
                }
                Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                    let reason = match result::mem_get_info() {
                        Ok((free, total)) => {
                            format!("{}; {free} of {total} bytes free", describe(e))
                        }
                        Err(_) => describe(e),
                    };
                    Err(DeviceError::OutOfMemory { bytes, reason })
                }
                Err(e) => Err(failed(format!("allocating {bytes} bytes"), e)),
            }
        })
    }

    fn free(&self, ptr: DevicePtr) {
        let freed = self.call("freeing device memory", || {
            let Some(bytes) = lock(&self.allocations).remove(&ptr) else {
                return Err(DeviceError::Failed {
                    what: format!("freeing {ptr:#x}"),
                    reason: "it is not an allocation of this device".into(),
                });
            };
            self.counters.freed(bytes);
            // SAFETY: allocated by `cuMemAllocAsync`, freed once, after the work enqueued
            // before (stream order).
            unsafe { result::free_async(ptr, self.stream) }
                .map_err(|e| failed(format!("freeing {ptr:#x}"), e))
        });
        if let Err(e) = freed {
            tracing::warn!("{e}");
        }
    }

    unsafe fn upload(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        self.enqueue_copy(bytes, Direction::HostToDevice, || {
            // SAFETY: the caller's contract (see the trait).
            unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, self.stream) }.result()
        })
    }

    unsafe fn download(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        self.enqueue_copy(bytes, Direction::DeviceToHost, || {
            // SAFETY: the caller's contract (see the trait).
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, self.stream) }.result()
        })
    }

    unsafe fn copy(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<(), DeviceError> {
        self.enqueue_copy(bytes, Direction::DeviceToDevice, || {
            // SAFETY: the caller's contract (see the trait).
            unsafe { result::memcpy_dtod_async(dst, src, bytes, self.stream) }
        })
    }

    unsafe fn zero(&self, dst: DevicePtr, bytes: usize) -> Result<(), DeviceError> {
        if bytes == 0 {
            return Ok(());
        }
        let what = format!("zeroing {bytes} bytes of device memory");
        self.call(&what, || {
            // SAFETY: the caller's contract (see the trait); the stream is this device's.
            unsafe { result::memset_d8_async(dst, 0, bytes, self.stream) }
                .map_err(|e| failed(what.clone(), e))
        })
    }

    unsafe fn copy_2d(&self, copy: &Copy2d) -> Result<(), DeviceError> {
        let Some((direction, what)) = Direction::of_pitched(copy)? else {
            return Ok(());
        };
        self.call(&what, || {
            let (src_type, src_host, src_device) = memory(copy.src);
            let (dst_type, dst_host, dst_device) = memory(copy.dst);
            let params = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: src_type,
                srcHost: src_host.cast_const().cast(),
                srcDevice: src_device,
                srcArray: std::ptr::null_mut(),
                srcPitch: copy.src_pitch,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: dst_type,
                dstHost: dst_host.cast(),
                dstDevice: dst_device,
                dstArray: std::ptr::null_mut(),
                dstPitch: copy.dst_pitch,
                WidthInBytes: copy.width,
                Height: copy.rows,
            };
            // SAFETY: the caller's contract (see the trait); `params` lives across the call.
            unsafe { sys::cuMemcpy2DAsync_v2(&params, self.stream) }
                .result()
                .map_err(|e| failed(what.clone(), e))?;
            self.counters.copied(direction, copy.width * copy.rows);
            Ok(())
        })
    }

    unsafe fn launch(&self, work: LaunchWork) -> Result<(), DeviceError> {
        self.call("launching a GPU kernel", || {
            self.counters.launched();
            runtime::launch(self.stream, work).map_err(DeviceError::Kernel)
        })
    }

    fn record(&self) -> Result<Event, DeviceError> {
        self.call("recording a CUDA event", || {
            let event = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(|e| failed("creating a CUDA event", e))?;
            // SAFETY: a fresh event and this device's stream.
            if let Err(e) = unsafe { result::event::record(event, self.stream) } {
                // SAFETY: created above, never recorded or shared.
                let _ = unsafe { result::event::destroy(event) };
                return Err(failed("recording a CUDA event", e));
            }
            let mut events = lock(&self.events);
            events.recorded += 1;
            let seq = events.recorded;
            events.pending.insert(seq, event);
            Ok(Event(seq))
        })
    }

    fn query(&self, event: Event) -> Result<bool, DeviceError> {
        self.settle(event, false)
    }

    fn wait(&self, event: Event) -> Result<(), DeviceError> {
        self.settle(event, true).map(|_| ())
    }

    fn synchronize(&self) -> Result<(), DeviceError> {
        self.call("synchronizing the GPU", || {
            self.counters.synced();
            // SAFETY: this device's stream.
            unsafe { result::stream::synchronize(self.stream) }.map_err(|e| {
                DeviceError::Kernel(format!("work on the GPU failed: {}", describe(e)))
            })?;
            let mut events = lock(&self.events);
            let recorded = events.recorded;
            events.complete_through(recorded);
            Ok(())
        })
    }

    unsafe fn register_host(&self, ptr: *mut u8, bytes: usize) -> Result<(), DeviceError> {
        let what = format!("page-locking {bytes} bytes of host memory");
        self.call(&what, || {
            // SAFETY: the caller's contract (see the trait).
            unsafe { sys::cuMemHostRegister_v2(ptr.cast(), bytes, 0) }
                .result()
                .map_err(|e| failed(what.clone(), e))
        })
    }

    unsafe fn unregister_host(&self, ptr: *mut u8) {
        let what = "unlocking host memory";
        let done = self.call(what, || {
            // SAFETY: the caller's contract (see the trait).
            unsafe { sys::cuMemHostUnregister(ptr.cast()) }
                .result()
                .map_err(|e| failed(what, e))
        });
        if let Err(e) = done {
            tracing::warn!("{e}");
        }
    }

    fn counters(&self) -> DeviceCounters {
        self.counters.snapshot()
    }
}

/// The memory type and address fields of one side of a pitched copy.
fn memory(place: Place) -> (sys::CUmemorytype, *mut u8, sys::CUdeviceptr) {
    match place {
        Place::Host(p) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, p, 0),
        Place::Device(p) => (
            sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            std::ptr::null_mut(),
            p,
        ),
    }
}

impl Drop for CudaDevice {
    /// Waits for the stream's work, then destroys its events and the stream.
    fn drop(&mut self) {
        let closed = self.call("closing the CUDA device", || {
            // SAFETY: this device's stream; nothing is enqueued on it after this.
            let drained = unsafe { result::stream::synchronize(self.stream) };
            let mut events = lock(&self.events);
            let recorded = events.recorded;
            events.complete_through(recorded);
            // SAFETY: created in `open`, destroyed once.
            unsafe { result::stream::destroy(self.stream) }
                .map_err(|e| failed("destroying the CUDA stream", e))?;
            drained.map_err(|e| failed("waiting for the GPU's last work", e))
        });
        if let Err(e) = closed {
            tracing::warn!("{e}");
        }
    }
}
