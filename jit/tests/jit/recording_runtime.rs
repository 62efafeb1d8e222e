//! A recording GPU runtime for tests: the MLIR GPU runtime functions with the signatures
//! LLVM declares them with, which call no driver and record each call (and a launch's
//! parameter words) in a thread-local log. Handles are placeholders, never dereferenced.

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};

use diffuse_jit::GpuRuntime;

/// One recorded runtime call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `mgpuModuleLoadJIT(ptx, opt_level)`: whether the PTX has an `.entry`.
    LoadJit { opt_level: i32, has_entry: bool },
    /// `mgpuModuleGetFunction(module, name)`.
    GetFunction(String),
    /// `mgpuStreamCreate()`.
    StreamCreate,
    /// `mgpuLaunchKernel(...)`: grid, block, and each kernel parameter read as a 64-bit word
    /// (the tests' kernels have only pointer, index and `f64` parameters).
    Launch {
        grid: [isize; 3],
        block: [isize; 3],
        params: Vec<u64>,
    },
    /// `mgpuStreamSynchronize(stream)`.
    StreamSynchronize,
    /// `mgpuStreamDestroy(stream)`.
    StreamDestroy,
}

thread_local! {
    static CALLS: RefCell<Vec<Call>> = const { RefCell::new(Vec::new()) };
}

fn record(call: Call) {
    // The module unload may run while a thread exits; nothing is recorded then.
    let _ = CALLS.try_with(|c| c.borrow_mut().push(call));
}

/// The calls recorded on this thread since the last `take`.
pub fn take() -> Vec<Call> {
    CALLS.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

const MODULE: usize = 0x10;
const FUNCTION: usize = 0x20;
const STREAM: usize = 0x30;

unsafe extern "C" fn module_load(_data: *mut c_void, _size: usize) -> *mut c_void {
    MODULE as *mut c_void
}

unsafe extern "C" fn module_load_jit(data: *mut c_void, opt_level: i32) -> *mut c_void {
    // SAFETY: NUL-terminated PTX embedded by the compiled code.
    let ptx = unsafe { CStr::from_ptr(data.cast()) }.to_string_lossy();
    record(Call::LoadJit {
        opt_level,
        has_entry: ptx.contains(".entry"),
    });
    MODULE as *mut c_void
}

unsafe extern "C" fn module_unload(_module: *mut c_void) {}

unsafe extern "C" fn module_get_function(_module: *mut c_void, name: *const c_char) -> *mut c_void {
    // SAFETY: a NUL-terminated name of the compiled code.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    record(Call::GetFunction(name));
    FUNCTION as *mut c_void
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn launch_kernel(
    _function: *mut c_void,
    grid_x: isize,
    grid_y: isize,
    grid_z: isize,
    block_x: isize,
    block_y: isize,
    block_z: isize,
    _shared_bytes: i32,
    _stream: *mut c_void,
    params: *mut *mut c_void,
    _extra: *mut *mut c_void,
    param_count: i64,
) {
    let params = (0..param_count as usize)
        // SAFETY: `params` holds `param_count` pointers to the parameters' values, each at
        // least 8 bytes for the tests' kernels.
        .map(|i| unsafe { (*params.add(i)).cast::<u64>().read_unaligned() })
        .collect();
    record(Call::Launch {
        grid: [grid_x, grid_y, grid_z],
        block: [block_x, block_y, block_z],
        params,
    });
}

unsafe extern "C" fn stream_create() -> *mut c_void {
    record(Call::StreamCreate);
    STREAM as *mut c_void
}

unsafe extern "C" fn stream_synchronize(_stream: *mut c_void) {
    record(Call::StreamSynchronize);
}

unsafe extern "C" fn stream_destroy(_stream: *mut c_void) {
    record(Call::StreamDestroy);
}

/// The recording runtime's functions, to link a `GpuJit`'s host code against.
pub fn runtime() -> GpuRuntime {
    GpuRuntime {
        module_load,
        module_load_jit,
        module_unload,
        module_get_function,
        launch_kernel,
        stream_create,
        stream_synchronize,
        stream_destroy,
    }
}
