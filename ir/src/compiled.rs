//! The compiled-kernel ABI: the canonical description of a fused kernel ([`KernelSignature`]:
//! what it computes, independent of which stores it runs on; the JIT's cache key) and how one
//! point's sub-stores are passed to it ([`MemRef`]). The runtime builds signatures, the JIT
//! compiles them, and backends call the result; all three meet here. A GPU kernel's host
//! code calls MLIR's GPU runtime functions ([`GpuRuntime`]): the JIT links against them and
//! the device layer implements them, without either knowing the other.
//!
//! Parameters are numbered by first use and stores renamed by first occurrence (the
//! De Bruijn-like renaming of the fusion memoization), and the key also carries what a
//! compiled kernel depends on beyond the fusion key: element types, ranks, privileges and the
//! dimensions broadcast with extent 1.

use std::ffi::{c_char, c_void};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::{DType, Privilege, TaskKind};

/// Where one parameter's sub-store lives for one call: the address of its first element
/// (null for a temporary, which the kernel never touches in memory), its extent and its
/// strides in elements (the innermost stride must be 1 unless that extent is at most 1).
#[derive(Clone, Copy, Debug)]
pub struct MemRef<'a> {
    /// Address of element (0, .., 0) of the sub-store.
    pub ptr: *mut u8,
    /// Extent per dimension.
    pub sizes: &'a [i64],
    /// Stride per dimension, in elements.
    pub strides: &'a [i64],
}

/// The one loop nest a fused kernel runs, when it is one: what each point's sub-stores must
/// look like for it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct IterationSpace {
    /// The parameter whose extent the nest iterates over: at each point every mutated
    /// parameter must have that extent, and every parameter read element by element must
    /// broadcast to it (extent equal, or 1 in a dimension the signature marks as unit).
    pub param: usize,
    /// The parameters only ever read whole (a sparse row's entries, the vector it
    /// multiplies), of any extent.
    pub whole: Vec<usize>,
}

/// One memref parameter of a fused kernel: a distinct (store, partition) pair the fused task
/// touches, or a temporary.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct KernelParam {
    /// Element type.
    pub dtype: DType,
    /// Rank of the store.
    pub rank: usize,
    /// The union of the constituents' privileges on it.
    pub privilege: Privilege,
    /// True for a temporary: produced and consumed inside the fused task, never in memory.
    pub temporary: bool,
    /// The store, renamed by first occurrence (two parameters with the same number are two
    /// partitions of one store).
    pub store: usize,
    /// Bit `d` set: dimension `d` has extent 1 at every point the kernel runs.
    pub unit_dims: u8,
}

/// One constituent of the fused kernel, in program order.
#[derive(Clone, Debug)]
pub struct KernelStep {
    /// The constituent's task kind.
    pub kind: Arc<TaskKind>,
    /// For each of the kind's store arguments: the parameter it is bound to and the
    /// constituent's privilege on it.
    pub bindings: Vec<(usize, Privilege)>,
}

/// The cache key and composition recipe of a fused kernel.
#[derive(Clone, Debug)]
pub struct KernelSignature {
    /// The fused task's name, for messages (not part of the key).
    pub name: String,
    /// Constituents in program order.
    pub steps: Vec<KernelStep>,
    /// Memref parameters in order.
    pub params: Vec<KernelParam>,
}

impl KernelSignature {
    /// The scalar types the kernel takes after its memrefs: every constituent's declared
    /// scalars, constituents in order.
    pub fn scalar_types(&self) -> impl Iterator<Item = DType> + '_ {
        self.steps
            .iter()
            .flat_map(|s| s.kind.scalars().iter().copied())
    }
}

impl PartialEq for KernelSignature {
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params
            && self.steps.len() == other.steps.len()
            && self
                .steps
                .iter()
                .zip(&other.steps)
                .all(|(a, b)| a.kind.id() == b.kind.id() && a.bindings == b.bindings)
    }
}

impl Eq for KernelSignature {}

impl Hash for KernelSignature {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.params.hash(state);
        for step in &self.steps {
            step.kind.id().hash(state);
            step.bindings.hash(state);
        }
    }
}

/// An opaque handle the GPU runtime functions hand out and take back (a loaded module, a
/// kernel function, a stream): compiled host code only passes it on.
pub type GpuHandle = *mut c_void;

/// `mgpuLaunchKernel(function, grid x, y, z, block x, y, z, shared memory bytes, stream,
/// parameters, extra, parameter count)`.
pub type GpuLaunchKernel = unsafe extern "C" fn(
    GpuHandle,
    isize,
    isize,
    isize,
    isize,
    isize,
    isize,
    i32,
    GpuHandle,
    *mut *mut c_void,
    *mut *mut c_void,
    i64,
);

/// The MLIR GPU runtime functions a GPU kernel's compiled host code calls, one field per
/// `mgpu*` function, typed as LLVM 22 declares them. The device layer implements them (on a
/// GPU driver); tests implement them by recording calls; the JIT links host code against
/// [`GpuRuntime::symbols`].
///
/// The host code of every call creates a stream, launches the kernels on it, then
/// synchronizes and destroys it (MLIR's lowering of a synchronous `gpu.launch_func`): for a
/// call to only enqueue, an implementation answers `stream_create` with the stream of the
/// launch in progress and makes `stream_synchronize` and `stream_destroy` of it return
/// without waiting. `module_unload` runs when the kernel is dropped, on any thread.
#[derive(Clone, Copy, Debug)]
pub struct GpuRuntime {
    /// `mgpuModuleLoad(data, size)`: a module from a binary image.
    pub module_load: unsafe extern "C" fn(*mut c_void, usize) -> GpuHandle,
    /// `mgpuModuleLoadJIT(ptx, optimization level)`: a module from NUL-terminated PTX.
    pub module_load_jit: unsafe extern "C" fn(*mut c_void, i32) -> GpuHandle,
    /// `mgpuModuleUnload(module)`.
    pub module_unload: unsafe extern "C" fn(GpuHandle),
    /// `mgpuModuleGetFunction(module, NUL-terminated name)`.
    pub module_get_function: unsafe extern "C" fn(GpuHandle, *const c_char) -> GpuHandle,
    /// `mgpuLaunchKernel(...)`.
    pub launch_kernel: GpuLaunchKernel,
    /// `mgpuStreamCreate()`.
    pub stream_create: unsafe extern "C" fn() -> GpuHandle,
    /// `mgpuStreamSynchronize(stream)`.
    pub stream_synchronize: unsafe extern "C" fn(GpuHandle),
    /// `mgpuStreamDestroy(stream)`.
    pub stream_destroy: unsafe extern "C" fn(GpuHandle),
}

impl GpuRuntime {
    /// Each function under the symbol name compiled host code calls it by, with its address:
    /// what the JIT registers with a GPU kernel's execution engine.
    pub fn symbols(&self) -> [(&'static str, *mut c_void); 8] {
        [
            ("mgpuModuleLoad", self.module_load as *mut c_void),
            ("mgpuModuleLoadJIT", self.module_load_jit as *mut c_void),
            ("mgpuModuleUnload", self.module_unload as *mut c_void),
            (
                "mgpuModuleGetFunction",
                self.module_get_function as *mut c_void,
            ),
            ("mgpuLaunchKernel", self.launch_kernel as *mut c_void),
            ("mgpuStreamCreate", self.stream_create as *mut c_void),
            (
                "mgpuStreamSynchronize",
                self.stream_synchronize as *mut c_void,
            ),
            ("mgpuStreamDestroy", self.stream_destroy as *mut c_void),
        ]
    }
}
