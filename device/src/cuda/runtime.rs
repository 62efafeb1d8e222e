//! The runtime functions MLIR's GPU lowering calls from a compiled kernel's host code
//! (`mgpuModuleLoadJIT`, `mgpuLaunchKernel`, ..., normally provided by MLIR's
//! `libmlir_cuda_runtime.so`, which needs CUDA to build), implemented on the driver.
//!
//! The compiled host function of a kernel loads its PTX in a global constructor (run on the
//! first call), and on every call "creates" a stream, launches each outlined kernel,
//! "synchronizes" and "destroys" the stream. The functions here have the signatures LLVM 22
//! declares them with (checked against the IR it emits) and differ from MLIR's C++ wrappers
//! in four ways: they run inside a *launch scope* ([`launch`]) whose stream is the caller's
//! (the device's own, or a Legion GPU task's), so kernels are ordered with the caller's
//! copies; a module is loaded into each CUDA context on its first launch there, not when the
//! constructor runs ([`ContextModules`]); synchronizing is left to the caller (the device is
//! asynchronous), so `mgpuStreamSynchronize` and `mgpuStreamDestroy` do nothing; and every
//! failure is recorded in the scope (the first one wins, later calls do nothing) and returned
//! by the launch, never printed. No function here panics or unwinds into compiled code.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUcontext, CUfunction, CUmodule, CUstream};
use diffuse_ir::{GpuHandle, GpuRuntime};

use super::describe;
use crate::panic_message;

/// What the runtime functions need during one launch: the stream to launch on, and the
/// first failure.
struct Scope {
    stream: CUstream,
    error: Option<String>,
}

thread_local! {
    /// The launch scope of the launch running on this thread (null outside one).
    static SCOPE: Cell<*mut Scope> = const { Cell::new(std::ptr::null_mut()) };
}

/// Sets a launch scope on this thread while it lives, restoring the previous one after.
struct Entered {
    scope: *mut Scope,
    previous: *mut Scope,
}

impl Entered {
    fn new(stream: CUstream) -> Self {
        let scope = Box::into_raw(Box::new(Scope {
            stream,
            error: None,
        }));
        let previous = SCOPE.with(|c| c.replace(scope));
        Entered { scope, previous }
    }

    /// The first failure recorded in the scope, if any.
    fn take_error(&mut self) -> Option<String> {
        // SAFETY: `scope` lives until drop; the runtime functions access it only while
        // compiled code runs, which it is not while `&mut self` is held.
        unsafe { (*self.scope).error.take() }
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        SCOPE.with(|c| c.set(self.previous));
        // SAFETY: created by `Box::into_raw` in `new`, no longer reachable from `SCOPE`.
        drop(unsafe { Box::from_raw(self.scope) });
    }
}

/// Runs `work` at once on this thread (the caller has made the device's context current)
/// inside a launch scope on `stream`: the error is the first failure a runtime function
/// recorded, else the work's own, else a panic in it.
pub(super) fn launch(
    stream: CUstream,
    work: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let mut scope = Entered::new(stream);
    let outcome = catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        Err(format!(
            "the kernel's host code panicked: {}",
            panic_message(&*panic)
        ))
    });
    match scope.take_error() {
        Some(error) => Err(error),
        None => outcome,
    }
}

/// Runs `f` on this thread's launch scope, if there is one.
fn with_scope<R>(f: impl FnOnce(Option<&mut Scope>) -> R) -> R {
    let scope = SCOPE.with(Cell::get);
    // SAFETY: the pointer is set only by `Entered::new`, on this thread, to a scope that
    // lives until the `Entered` is dropped, and nothing else accesses it during `f`.
    f(unsafe { scope.as_mut() })
}

/// Records the scope's first failure (or logs it outside a scope).
fn fail(message: String) {
    with_scope(|scope| match scope {
        Some(s) => {
            s.error.get_or_insert(message);
        }
        None => tracing::warn!("GPU runtime call outside a launch failed: {message}"),
    });
}

/// True once the current launch has failed: later calls do nothing.
fn failed() -> bool {
    with_scope(|scope| scope.is_some_and(|s| s.error.is_some()))
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

/// A GPU module as compiled code holds it (the `CUmodule` handle `mgpuModuleLoad*` returns):
/// its image, loaded into each CUDA context that launches its kernels, on the first launch
/// there. The embedded device launches in its one context; Legion runs each GPU's tasks in
/// that GPU's own context, so one compiled kernel may run in several.
struct ContextModules {
    /// The image the compiled code embeds (it outlives the handle: the engine's global
    /// destructor unloads the handle before the engine is freed).
    image: *const c_void,
    /// `Some(level)`: NUL-terminated PTX the driver compiles at that level; `None`: an
    /// image for `cuModuleLoadData` (cubin or PTX).
    jit: Option<i32>,
    /// The module loaded in each context so far.
    loaded: std::sync::Mutex<Vec<(CUcontext, CUmodule)>>,
}

impl ContextModules {
    /// A handle for `image`, loaded nowhere yet.
    fn handle(image: *mut c_void, jit: Option<i32>) -> GpuHandle {
        Box::into_raw(Box::new(ContextModules {
            image,
            jit,
            loaded: std::sync::Mutex::new(Vec::new()),
        }))
        .cast()
    }

    /// The module in `context`, loaded there by `load` (given the image) the first time.
    fn in_context(
        &self,
        context: CUcontext,
        load: impl FnOnce(*const c_void, Option<i32>) -> Result<CUmodule, String>,
    ) -> Result<CUmodule, String> {
        let mut loaded = self
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&(_, module)) = loaded.iter().find(|(c, _)| *c == context) {
            return Ok(module);
        }
        let module = load(self.image, self.jit)?;
        loaded.push((context, module));
        Ok(module)
    }
}

/// Loads a module image into the current context: `cuModuleLoadData`, or for PTX with a
/// JIT level `cuModuleLoadDataEx` with the driver's error log in the failure.
fn load_image(image: *const c_void, jit: Option<i32>) -> Result<CUmodule, String> {
    let Some(opt_level) = jit else {
        // SAFETY: `image` is the module image the compiled code embeds.
        return unsafe { result::module::load_data(image) }
            .map_err(|e| format!("loading the GPU module failed: {}", describe(e)));
    };
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
    // SAFETY: `image` is NUL-terminated PTX embedded by the compiled code; the option arrays
    // have the given length and the log buffer its declared size.
    let status = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            image,
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    status.result().map(|()| module).map_err(|e| {
        let text = CStr::from_bytes_until_nul(&log)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!(
            "the driver could not JIT-compile the PTX: {}{}{}",
            describe(e),
            if text.is_empty() { "" } else { "\n" },
            text.trim_end()
        )
    })
}

/// `mgpuModuleLoad(data, size)`: a cubin or PTX image, loaded into each context on its
/// first launch there ([`ContextModules`]).
unsafe extern "C" fn mgpu_module_load(data: *mut c_void, _size: usize) -> GpuHandle {
    guarded("mgpuModuleLoad", std::ptr::null_mut(), || {
        if failed() || data.is_null() {
            return std::ptr::null_mut();
        }
        ContextModules::handle(data, None)
    })
}

/// `mgpuModuleLoadJIT(ptx, opt_level)`: a NUL-terminated PTX image the driver compiles for
/// each context's device on its first launch there.
unsafe extern "C" fn mgpu_module_load_jit(data: *mut c_void, opt_level: i32) -> GpuHandle {
    guarded("mgpuModuleLoadJIT", std::ptr::null_mut(), || {
        if failed() || data.is_null() {
            return std::ptr::null_mut();
        }
        ContextModules::handle(data, Some(opt_level))
    })
}

/// `mgpuModuleUnload(module)`: run by the engine's global destructor, on any thread;
/// unloads the module from every context it was loaded into (a context already destroyed,
/// at exit, is skipped).
unsafe extern "C" fn mgpu_module_unload(module: GpuHandle) {
    guarded("mgpuModuleUnload", (), || {
        if module.is_null() {
            return;
        }
        // SAFETY: the handle was made by `ContextModules::handle` and is unloaded once.
        let modules = unsafe { Box::from_raw(module.cast::<ContextModules>()) };
        let loaded = modules
            .loaded
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (context, module) in loaded {
            // SAFETY: `module` was loaded in `context`, which is made current only for the
            // unload and popped after it.
            unsafe {
                if sys::cuCtxPushCurrent_v2(context).result().is_err() {
                    continue;
                }
                if let Err(e) = result::module::unload(module) {
                    tracing::debug!("unloading a GPU module failed: {}", describe(e));
                }
                let mut popped: CUcontext = std::ptr::null_mut();
                let _ = sys::cuCtxPopCurrent_v2(&mut popped);
            }
        }
    })
}

/// `mgpuModuleGetFunction(module, name)`: the kernel in the module as loaded into the
/// current context (loading it there first if needed).
unsafe extern "C" fn mgpu_module_get_function(module: GpuHandle, name: *const c_char) -> GpuHandle {
    guarded("mgpuModuleGetFunction", std::ptr::null_mut(), || {
        if failed() {
            return std::ptr::null_mut();
        }
        if module.is_null() || name.is_null() {
            fail("a kernel was requested from a GPU module that is not loaded".into());
            return std::ptr::null_mut();
        }
        // SAFETY: non-null handles come from `ContextModules::handle` and live until
        // `mgpuModuleUnload`, which the compiled code calls after its last launch.
        let modules = unsafe { &*module.cast::<ContextModules>() };
        let context = match result::ctx::get_current() {
            Ok(Some(context)) => context,
            Ok(None) => {
                fail("no CUDA context is current on the launching thread".into());
                return std::ptr::null_mut();
            }
            Err(e) => {
                fail(format!("cuCtxGetCurrent failed: {}", describe(e)));
                return std::ptr::null_mut();
            }
        };
        let loaded = match modules.in_context(context, load_image) {
            Ok(loaded) => loaded,
            Err(e) => {
                fail(e);
                return std::ptr::null_mut();
            }
        };
        let mut function: CUfunction = std::ptr::null_mut();
        // SAFETY: `loaded` is loaded in the current context; `name` is a NUL-terminated
        // string of the compiled code.
        let status = unsafe { sys::cuModuleGetFunction(&mut function, loaded, name) };
        match status.result() {
            Ok(()) => function.cast(),
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
    function: GpuHandle,
    grid_x: isize,
    grid_y: isize,
    grid_z: isize,
    block_x: isize,
    block_y: isize,
    block_z: isize,
    shared_bytes: i32,
    stream: GpuHandle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    _param_count: i64,
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
        let block = [block_x, block_y, block_z];
        if grid.iter().any(|&g| g <= 0) {
            return;
        }
        let dims = [grid_x, grid_y, grid_z, block_x, block_y, block_z];
        if dims.iter().any(|&d| d <= 0 || d > u32::MAX as isize) || shared_bytes < 0 {
            fail(format!(
                "launch configuration out of range: grid {grid:?}, block {block:?}"
            ));
            return;
        }
        // SAFETY: `function` is a loaded kernel; `params` holds one pointer per kernel
        // parameter, built by the compiled code; the stream is the launch scope's.
        let status = unsafe {
            sys::cuLaunchKernel(
                function.cast(),
                grid_x as u32,
                grid_y as u32,
                grid_z as u32,
                block_x as u32,
                block_y as u32,
                block_z as u32,
                shared_bytes as u32,
                stream.cast(),
                params,
                extra,
            )
        };
        if let Err(e) = status.result() {
            fail(format!(
                "kernel launch (grid {grid:?}, block {block:?}) failed: {}",
                describe(e)
            ));
        }
    })
}

/// `mgpuStreamCreate()`: the launch scope's stream (outside a scope: null, the legacy
/// default stream, with a warning).
unsafe extern "C" fn mgpu_stream_create() -> GpuHandle {
    with_scope(|scope| match scope {
        Some(s) => s.stream.cast(),
        None => {
            tracing::warn!("mgpuStreamCreate outside a launch: using the default stream");
            std::ptr::null_mut()
        }
    })
}

/// `mgpuStreamSynchronize(stream)`: nothing; the device is asynchronous and its caller
/// waits (errors of the kernels surface there).
unsafe extern "C" fn mgpu_stream_synchronize(_stream: GpuHandle) {}

/// `mgpuStreamDestroy(stream)`: nothing; the stream is the device's.
unsafe extern "C" fn mgpu_stream_destroy(_stream: GpuHandle) {}

/// The functions MLIR's GPU lowering calls from a compiled kernel's host code, for the JIT
/// to link every GPU kernel's host code against. Run that host code through
/// [`Device::launch`](crate::Device::launch) of a [`CudaDevice`](super::CudaDevice): its
/// kernels then run on the device's stream, and their failures are the launch's error.
pub fn mlir_runtime() -> GpuRuntime {
    GpuRuntime {
        module_load: mgpu_module_load,
        module_load_jit: mgpu_module_load_jit,
        module_unload: mgpu_module_unload,
        module_get_function: mgpu_module_get_function,
        launch_kernel: mgpu_launch_kernel,
        stream_create: mgpu_stream_create,
        stream_synchronize: mgpu_stream_synchronize,
        stream_destroy: mgpu_stream_destroy,
    }
}

#[cfg(test)]
mod tests {
    //! The runtime functions inside and outside a launch scope, without a GPU: failures are
    //! recorded (the first one wins) and nothing crashes.

    use super::*;

    /// A stream handle for scopes that never reach the driver.
    fn fake_stream() -> CUstream {
        0x5000 as CUstream
    }

    /// Calls `mgpuLaunchKernel` with a null function (one block of 32 threads) on the
    /// current scope's stream.
    ///
    /// # Safety
    /// None really: a null function is rejected before the driver is called.
    unsafe fn launch_null_kernel() {
        // SAFETY: see above.
        unsafe {
            mgpu_launch_kernel(
                std::ptr::null_mut(),
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                mgpu_stream_create(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        }
    }

    #[test]
    fn stream_create_outside_a_scope_is_the_default_stream() {
        // SAFETY: takes no arguments and touches no driver.
        assert!(unsafe { mgpu_stream_create() }.is_null());
    }

    #[test]
    fn stream_create_in_a_scope_is_the_scope_stream_and_nested_scopes_restore() {
        let outer = launch(
            fake_stream(),
            Box::new(|| {
                // SAFETY: as above.
                let stream = unsafe { mgpu_stream_create() };
                if stream != fake_stream().cast() {
                    return Err(format!("stream {stream:?}"));
                }
                launch(0x6000 as CUstream, Box::new(|| Ok(())))?;
                // SAFETY: as above.
                let again = unsafe { mgpu_stream_create() };
                (again == fake_stream().cast())
                    .then_some(())
                    .ok_or_else(|| format!("restored stream {again:?}"))
            }),
        );
        assert_eq!(outer, Ok(()));
        // SAFETY: as above.
        assert!(unsafe { mgpu_stream_create() }.is_null());
    }

    #[test]
    fn launching_a_missing_kernel_is_the_launch_error_and_the_first_error_wins() {
        let outcome = launch(
            fake_stream(),
            Box::new(|| {
                // SAFETY: a null function is rejected before the driver is called; a null
                // module likewise.
                unsafe {
                    launch_null_kernel();
                    mgpu_module_get_function(std::ptr::null_mut(), c"k".as_ptr());
                    mgpu_stream_synchronize(fake_stream().cast());
                    mgpu_stream_destroy(fake_stream().cast());
                }
                Err("the work's own error".into())
            }),
        );
        assert_eq!(
            outcome,
            Err("launch of a kernel that was not found".to_string())
        );
    }

    #[test]
    fn the_work_error_and_panics_are_the_launch_error() {
        assert_eq!(
            launch(fake_stream(), Box::new(|| Err("bad".into()))),
            Err("bad".to_string())
        );
        let panicked = launch(fake_stream(), Box::new(|| panic!("boom")));
        assert!(
            panicked.as_ref().is_err_and(|e| e.contains("boom")),
            "{panicked:?}"
        );
        // The scope is gone after a panic.
        // SAFETY: as above.
        assert!(unsafe { mgpu_stream_create() }.is_null());
    }

    #[test]
    fn failures_outside_a_scope_are_logged_not_raised() {
        // SAFETY: a null function and null modules are rejected before the driver is called.
        unsafe {
            launch_null_kernel();
            assert!(mgpu_module_get_function(std::ptr::null_mut(), c"k".as_ptr()).is_null());
            assert!(mgpu_module_load(std::ptr::null_mut(), 0).is_null());
            assert!(mgpu_module_load_jit(std::ptr::null_mut(), 2).is_null());
            mgpu_module_unload(std::ptr::null_mut());
        }
        assert!(!failed());
    }

    #[test]
    fn a_module_is_loaded_once_in_each_context_that_asks_for_it() {
        let image = 0x7000 as *mut c_void;
        let handle = ContextModules::handle(image, Some(3));
        // SAFETY: made just above, freed at the end of the test.
        let modules = unsafe { Box::from_raw(handle.cast::<ContextModules>()) };
        let loads = std::cell::Cell::new(0);
        let loader = |module: usize| {
            let loads = &loads;
            move |got: *const c_void, jit: Option<i32>| {
                assert_eq!((got, jit), (image.cast_const(), Some(3)));
                loads.set(loads.get() + 1);
                Ok(module as CUmodule)
            }
        };
        let (first, second) = (0x100 as CUcontext, 0x200 as CUcontext);
        assert_eq!(modules.in_context(first, loader(1)), Ok(1 as CUmodule));
        assert_eq!(modules.in_context(second, loader(2)), Ok(2 as CUmodule));
        assert_eq!(modules.in_context(first, loader(3)), Ok(1 as CUmodule));
        assert_eq!(loads.get(), 2);
        // A failed load is the launch's error and leaves nothing behind: the next launch in
        // that context tries again.
        let third = 0x300 as CUcontext;
        let refused = modules.in_context(third, |_, _| Err("bad PTX".to_string()));
        assert_eq!(refused, Err("bad PTX".to_string()));
        assert_eq!(modules.in_context(third, loader(4)), Ok(4 as CUmodule));
    }

    #[test]
    fn the_symbols_are_the_eight_lowering_functions() {
        let symbols = mlir_runtime().symbols();
        let names: Vec<_> = symbols.iter().map(|s| s.0).collect();
        assert_eq!(
            names,
            [
                "mgpuModuleLoad",
                "mgpuModuleLoadJIT",
                "mgpuModuleUnload",
                "mgpuModuleGetFunction",
                "mgpuLaunchKernel",
                "mgpuStreamCreate",
                "mgpuStreamSynchronize",
                "mgpuStreamDestroy"
            ]
        );
        assert!(symbols.iter().all(|s| !s.1.is_null()));
    }
}
