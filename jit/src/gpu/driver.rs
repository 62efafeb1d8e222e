//! The CUDA driver, opened at run time through `cudarc`, and the runtime functions that
//! MLIR's GPU lowering calls from host code (`mgpuModuleLoadJIT`, `mgpuLaunchKernel`, ...,
//! normally provided by MLIR's `libmlir_cuda_runtime.so`, which needs CUDA to build).
//!
//! The compiled host function of a GPU kernel loads its PTX in a global constructor (run on
//! the first launch), and on every call creates a stream, launches each outlined kernel,
//! synchronizes and destroys the stream. The functions here implement those calls with the
//! signatures LLVM 22 declares them with (checked against the IR it emits), and with two
//! differences from MLIR's C++ wrappers: every failure is recorded in the current launch's
//! [`LaunchState`] (the launch then returns it as an error) instead of being printed, and the
//! stream is the launch's own, so that the copies of the sub-stores to and from the device
//! are ordered with the kernels. No function here panics or unwinds into compiled code.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUcontext, CUfunction, CUmodule, CUstream};

/// The device kernels run on: device 0 and its primary context.
pub(crate) struct Device {
    /// The device's name.
    pub(crate) name: String,
    /// Compute capability (major, minor).
    pub(crate) compute_capability: (i32, i32),
    /// Total memory in bytes.
    pub(crate) memory_bytes: usize,
    context: CUcontext,
}

// SAFETY: a CUDA context handle may be used from any thread (it is made current per thread).
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

/// The process's device, opened on first use; `Err` says why there is none (no driver
/// library, no device, initialization failed). Never panics.
pub(crate) fn device() -> Result<&'static Device, String> {
    static DEVICE: OnceLock<Result<Device, String>> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            catch_unwind(open_device).unwrap_or_else(|panic| {
                Err(format!(
                    "the CUDA driver failed while opening the device: {}",
                    panic_message(&*panic)
                ))
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn open_device() -> Result<Device, String> {
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
    Ok(Device {
        name,
        compute_capability: (major, minor),
        memory_bytes,
        context,
    })
}

impl Device {
    /// Makes the device's context current on this thread.
    pub(crate) fn bind(&self) -> Result<(), String> {
        // SAFETY: the context is the retained primary context, never released.
        unsafe { result::ctx::set_current(self.context) }
            .map_err(|e| format!("cuCtxSetCurrent failed: {}", describe(e)))
    }
}

/// A driver error as `NAME: description`.
pub(crate) fn describe(e: DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name}: {}", s.to_string_lossy()),
        Err(_) => name,
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

/// What the runtime functions need during one launch (or the first launch's module loads):
/// the stream to use, and the first failure.
struct LaunchState {
    stream: CUstream,
    error: Option<String>,
    /// Tests only: record the runtime calls instead of calling the driver.
    #[cfg(test)]
    dry_run: Option<Vec<String>>,
}

thread_local! {
    static CURRENT: Cell<*mut LaunchState> = const { Cell::new(std::ptr::null_mut()) };
}

/// One launch on this thread: while it lives, the runtime functions called by compiled code
/// on this thread use its stream and record their failures in it.
pub(crate) struct Launch {
    state: *mut LaunchState,
    previous: *mut LaunchState,
}

impl Launch {
    /// Starts a launch on `stream`.
    pub(crate) fn enter(stream: &Stream) -> Self {
        Self::with_state(LaunchState {
            stream: stream.raw,
            error: None,
            #[cfg(test)]
            dry_run: None,
        })
    }

    fn with_state(state: LaunchState) -> Self {
        let state = Box::into_raw(Box::new(state));
        let previous = CURRENT.with(|c| c.replace(state));
        Launch { state, previous }
    }

    /// Tests only: a launch whose runtime calls are recorded (see [`Launch::calls`]) and
    /// answered with placeholders, without a driver or a device.
    #[cfg(test)]
    pub(crate) fn dry_run() -> Self {
        Self::with_state(LaunchState {
            stream: std::ptr::null_mut(),
            error: None,
            dry_run: Some(Vec::new()),
        })
    }

    /// Tests only: the runtime calls of a dry run so far.
    #[cfg(test)]
    pub(crate) fn calls(&mut self) -> Vec<String> {
        // SAFETY: as in `take_error`.
        unsafe { (*self.state).dry_run.take().unwrap_or_default() }
    }

    /// The first failure recorded so far, if any (and clears it).
    pub(crate) fn take_error(&mut self) -> Option<String> {
        // SAFETY: `state` is live until drop; the runtime functions access it only during
        // calls into compiled code, which are not running while `&mut self` is held.
        unsafe { (*self.state).error.take() }
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
        // SAFETY: created by `Box::into_raw` in `enter`, no longer reachable from `CURRENT`.
        drop(unsafe { Box::from_raw(self.state) });
    }
}

/// Runs `f` on the current launch state, if there is one.
fn with_state<R>(f: impl FnOnce(Option<&mut LaunchState>) -> R) -> R {
    let state = CURRENT.with(Cell::get);
    // SAFETY: the pointer is set only by `Launch::enter`, on this thread, to a state that
    // lives until the `Launch` is dropped, and nothing else accesses it during the callback.
    f(unsafe { state.as_mut() })
}

/// Records the first failure of the current launch (or logs it outside a launch).
fn fail(message: String) {
    with_state(|state| match state {
        Some(s) => {
            if s.error.is_none() {
                s.error = Some(message);
            }
        }
        None => tracing::warn!("GPU runtime call outside a launch failed: {message}"),
    });
}

/// True once the current launch has failed: later calls do nothing.
fn failed() -> bool {
    with_state(|state| state.is_some_and(|s| s.error.is_some()))
}

/// A placeholder handle of a dry run (never passed to the driver).
const PLACEHOLDER: usize = usize::MAX - 0xFF;

/// In a dry run (tests only), records `call()` and returns true: the caller then answers
/// with a placeholder instead of calling the driver.
#[cfg(test)]
fn dry(call: impl FnOnce() -> String) -> bool {
    with_state(|state| match state.and_then(|s| s.dry_run.as_mut()) {
        Some(calls) => {
            calls.push(call());
            true
        }
        None => false,
    })
}

#[cfg(not(test))]
fn dry(_call: impl FnOnce() -> String) -> bool {
    false
}

/// Runs a runtime function's body, turning a panic (e.g. a driver function missing from an
/// old driver) into a recorded failure and `fallback`.
fn guarded<R>(what: &str, fallback: R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(panic) => {
            fail(format!("{what}: {}", panic_message(&*panic)));
            fallback
        }
    }
}

/// `mgpuModuleLoad(data, size)`: loads a cubin or PTX image.
unsafe extern "C" fn mgpu_module_load(data: *mut c_void, _size: usize) -> CUmodule {
    guarded("mgpuModuleLoad", std::ptr::null_mut(), || {
        if failed() || data.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: `data` is the module image the compiled code embeds.
        match unsafe { result::module::load_data(data) } {
            Ok(m) => m,
            Err(e) => {
                fail(format!("loading the GPU module failed: {}", describe(e)));
                std::ptr::null_mut()
            }
        }
    })
}

/// `mgpuModuleLoadJIT(ptx, opt_level)`: JIT-compiles a NUL-terminated PTX image for the
/// device, with the driver's error log in the failure message.
unsafe extern "C" fn mgpu_module_load_jit(data: *mut c_void, opt_level: i32) -> CUmodule {
    guarded("mgpuModuleLoadJIT", std::ptr::null_mut(), || {
        if failed() || data.is_null() {
            return std::ptr::null_mut();
        }
        if dry(|| {
            // SAFETY: NUL-terminated PTX embedded by the compiled code.
            let ptx = unsafe { CStr::from_ptr(data.cast()) }.to_string_lossy();
            let entry = ptx.contains(".entry");
            format!("mgpuModuleLoadJIT(O{opt_level}, entry: {entry})")
        }) {
            return PLACEHOLDER as CUmodule;
        }
        let mut log = vec![0u8; 8192];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_OPTIMIZATION_LEVEL,
        ];
        // Option values are passed in pointer-sized slots.
        let mut values = [
            log.as_mut_ptr().cast::<c_void>(),
            log.len() as *mut c_void,
            opt_level.clamp(0, 4) as usize as *mut c_void,
        ];
        let mut module: CUmodule = std::ptr::null_mut();
        // SAFETY: `data` is NUL-terminated PTX embedded by the compiled code; the option
        // arrays have the given length and the log buffer its declared size.
        let status = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                data,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        match status.result() {
            Ok(()) => module,
            Err(e) => {
                let text = CStr::from_bytes_until_nul(&log)
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                fail(format!(
                    "the driver could not JIT-compile the PTX: {}{}{}",
                    describe(e),
                    if text.is_empty() { "" } else { "\n" },
                    text.trim_end()
                ));
                std::ptr::null_mut()
            }
        }
    })
}

/// `mgpuModuleUnload(module)`: run by the engine's global destructor, on any thread.
unsafe extern "C" fn mgpu_module_unload(module: CUmodule) {
    guarded("mgpuModuleUnload", (), || {
        if module.is_null() {
            return;
        }
        if module as usize == PLACEHOLDER {
            return;
        }
        if let Ok(device) = device() {
            if device.bind().is_ok() {
                // SAFETY: the module was loaded by `mgpuModuleLoad*` and is unloaded once.
                if let Err(e) = unsafe { result::module::unload(module) } {
                    tracing::debug!("unloading a GPU module failed: {}", describe(e));
                }
            }
        }
    })
}

/// `mgpuModuleGetFunction(module, name)`.
unsafe extern "C" fn mgpu_module_get_function(module: CUmodule, name: *const c_char) -> CUfunction {
    guarded("mgpuModuleGetFunction", std::ptr::null_mut(), || {
        if failed() {
            return std::ptr::null_mut();
        }
        if module.is_null() || name.is_null() {
            fail("a kernel was requested from a GPU module that is not loaded".into());
            return std::ptr::null_mut();
        }
        if dry(|| {
            // SAFETY: a NUL-terminated name of the compiled code.
            let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            format!("mgpuModuleGetFunction({name})")
        }) {
            return PLACEHOLDER as CUfunction;
        }
        let mut function: CUfunction = std::ptr::null_mut();
        // SAFETY: `module` is loaded; `name` is a NUL-terminated string of the compiled code.
        let status = unsafe { sys::cuModuleGetFunction(&mut function, module, name) };
        match status.result() {
            Ok(()) => function,
            Err(e) => {
                // SAFETY: as above.
                let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
                fail(format!("kernel {name} not found: {}", describe(e)));
                std::ptr::null_mut()
            }
        }
    })
}

/// `mgpuLaunchKernel(function, grid xyz, block xyz, shared memory, stream, params, extra,
/// parameter count)` (the count, appended by LLVM 22, is not needed by the driver). An empty
/// grid launches nothing: a sub-store with an empty extent.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn mgpu_launch_kernel(
    function: CUfunction,
    grid_x: isize,
    grid_y: isize,
    grid_z: isize,
    block_x: isize,
    block_y: isize,
    block_z: isize,
    shared_bytes: i32,
    stream: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    param_count: i64,
) {
    guarded("mgpuLaunchKernel", (), || {
        if failed() {
            return;
        }
        if function.is_null() {
            fail("launch of a kernel that was not found".into());
            return;
        }
        let grid = [grid_x, grid_y, grid_z];
        if dry(|| {
            format!(
                "mgpuLaunchKernel(grid {grid:?}, block {:?}, {param_count} parameters)",
                [block_x, block_y, block_z]
            )
        }) {
            return;
        }
        if grid.iter().any(|&g| g <= 0) {
            return;
        }
        let dims = [grid_x, grid_y, grid_z, block_x, block_y, block_z];
        if dims.iter().any(|&d| d <= 0 || d > u32::MAX as isize) || shared_bytes < 0 {
            fail(format!(
                "launch configuration out of range: grid {grid:?}, block {:?}",
                [block_x, block_y, block_z]
            ));
            return;
        }
        // SAFETY: `function` is a loaded kernel; `params` holds one pointer per kernel
        // parameter, built by the compiled code; the stream is the launch's.
        let status = unsafe {
            sys::cuLaunchKernel(
                function,
                grid_x as u32,
                grid_y as u32,
                grid_z as u32,
                block_x as u32,
                block_y as u32,
                block_z as u32,
                shared_bytes as u32,
                stream,
                params,
                extra,
            )
        };
        if let Err(e) = status.result() {
            fail(format!(
                "kernel launch (grid {grid:?}, block {:?}) failed: {}",
                [block_x, block_y, block_z],
                describe(e)
            ));
        }
    })
}

/// `mgpuStreamCreate()`: the launch's stream.
unsafe extern "C" fn mgpu_stream_create() -> CUstream {
    dry(|| "mgpuStreamCreate".into());
    with_state(|state| match state {
        Some(s) => s.stream,
        None => {
            tracing::warn!("mgpuStreamCreate outside a launch: using the default stream");
            std::ptr::null_mut()
        }
    })
}

/// `mgpuStreamSynchronize(stream)`: waits for the kernels (errors of asynchronous kernel
/// execution, e.g. an illegal address, surface here).
unsafe extern "C" fn mgpu_stream_synchronize(stream: CUstream) {
    guarded("mgpuStreamSynchronize", (), || {
        if failed() || dry(|| "mgpuStreamSynchronize".into()) {
            return;
        }
        // SAFETY: the stream is the launch's, alive until the launch ends.
        if let Err(e) = unsafe { result::stream::synchronize(stream) } {
            fail(format!("the GPU kernel failed: {}", describe(e)));
        }
    })
}

/// `mgpuStreamDestroy(stream)`: the launch destroys its stream itself.
unsafe extern "C" fn mgpu_stream_destroy(_stream: CUstream) {
    dry(|| "mgpuStreamDestroy".into());
}

/// The runtime functions to register with every GPU kernel's engine: (name, address).
pub(crate) fn symbols() -> [(&'static str, *mut c_void); 8] {
    [
        ("mgpuModuleLoad", mgpu_module_load as *mut c_void),
        ("mgpuModuleLoadJIT", mgpu_module_load_jit as *mut c_void),
        ("mgpuModuleUnload", mgpu_module_unload as *mut c_void),
        (
            "mgpuModuleGetFunction",
            mgpu_module_get_function as *mut c_void,
        ),
        ("mgpuLaunchKernel", mgpu_launch_kernel as *mut c_void),
        ("mgpuStreamCreate", mgpu_stream_create as *mut c_void),
        (
            "mgpuStreamSynchronize",
            mgpu_stream_synchronize as *mut c_void,
        ),
        ("mgpuStreamDestroy", mgpu_stream_destroy as *mut c_void),
    ]
}

/// A device allocation, freed on drop.
pub(crate) struct DeviceBuffer {
    pub(crate) ptr: sys::CUdeviceptr,
}

impl DeviceBuffer {
    /// `bytes` bytes of device memory (`bytes > 0`), with the context current.
    pub(crate) fn new(bytes: usize) -> Result<Self, String> {
        // SAFETY: the context is current (the caller bound it); the memory is only used
        // through the kernel's descriptors and the copies.
        let ptr = unsafe { result::malloc_sync(bytes) }.map_err(|e| {
            format!(
                "allocating {bytes} bytes of device memory failed: {}",
                describe(e)
            )
        })?;
        Ok(DeviceBuffer { ptr })
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by `cuMemAlloc`, freed once; the launch synchronized its stream
        // (or failed) before dropping its buffers.
        let ptr = self.ptr;
        let _ = catch_unwind(|| unsafe { result::free_sync(ptr) });
    }
}

/// A stream owned by one launch, destroyed on drop.
pub(crate) struct Stream {
    pub(crate) raw: CUstream,
}

impl Stream {
    pub(crate) fn new() -> Result<Self, String> {
        let raw = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| format!("cuStreamCreate failed: {}", describe(e)))?;
        Ok(Stream { raw })
    }

    pub(crate) fn synchronize(&self) -> Result<(), String> {
        // SAFETY: the stream is alive.
        unsafe { result::stream::synchronize(self.raw) }
            .map_err(|e| format!("the GPU stream failed: {}", describe(e)))
    }

    /// Copies `src` to device memory at `dst` (ordered on this stream).
    ///
    /// # Safety
    /// `dst` must have room for `src`.
    pub(crate) unsafe fn upload(&self, dst: sys::CUdeviceptr, src: &[u8]) -> Result<(), String> {
        // SAFETY: the caller vouches for `dst`; pageable sources are staged by the driver
        // before the call returns.
        unsafe { result::memcpy_htod_async(dst, src, self.raw) }
            .map_err(|e| format!("copying to the GPU failed: {}", describe(e)))
    }

    /// Copies device memory at `src` into `dst` (ordered on this stream; complete after
    /// [`Stream::synchronize`]).
    ///
    /// # Safety
    /// `src` must hold `dst.len()` bytes; `dst` must stay valid until synchronized.
    pub(crate) unsafe fn download(
        &self,
        dst: &mut [u8],
        src: sys::CUdeviceptr,
    ) -> Result<(), String> {
        // SAFETY: the caller vouches for both.
        unsafe { result::memcpy_dtoh_async(dst, src, self.raw) }
            .map_err(|e| format!("copying from the GPU failed: {}", describe(e)))
    }
}

/// Synchronizes a stream when dropped (errors ignored: they were or will be reported).
pub(crate) struct Drain<'a>(pub(crate) &'a Stream);

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        let _ = catch_unwind(AssertUnwindSafe(|| self.0.synchronize()));
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: created by `cuStreamCreate`, destroyed once, after its work (the launch
        // synchronizes before dropping it; destroying a busy stream is also allowed).
        let raw = self.raw;
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe { result::stream::destroy(raw) }));
    }
}
