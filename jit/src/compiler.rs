//! The MLIR side of compilation: one long-lived context with every dialect, the pass
//! pipelines, and the ORC JIT (MLIR's `ExecutionEngine`) that turns a composed module into
//! machine code for this host.

use std::ffi::c_void;
use std::path::Path;
use std::sync::{Arc, Mutex, Once};

use diffuse_ir::Scalar;
use melior::dialect::DialectRegistry;
use melior::ir::Module;
use melior::pass::PassManager;
use melior::utility::{
    parse_pass_pipeline, register_all_dialects, register_all_llvm_translations, register_all_passes,
};
use melior::Context;
use mlir_sys::{
    mlirExecutionEngineCreate, mlirExecutionEngineDestroy, mlirExecutionEngineDumpToObjectFile,
    mlirExecutionEngineInitialize, mlirExecutionEngineLookup, mlirExecutionEngineRegisterSymbol,
    MlirExecutionEngine, MlirStringRef,
};

/// Fuses the constituents' `linalg` ops (removing the temporaries between them), bufferizes
/// in place into the parameters, and lowers to loops. Math ops become calls first so that
/// the prelude's polynomial definitions are used and then inlined into the loops.
pub(crate) const FUSE_PIPELINE: &str = "builtin.module(convert-math-to-libm,inline,\
func.func(linalg-fuse-elementwise-ops,canonicalize,cse),eliminate-empty-tensors,\
one-shot-bufferize,func.func(buffer-hoisting,convert-linalg-to-loops,canonicalize,cse),\
buffer-deallocation-pipeline,convert-bufferization-to-memref,symbol-dce)";

/// Lowers the loops to the LLVM dialect for the host.
pub(crate) const LOWER_PIPELINE: &str = "builtin.module(convert-scf-to-cf,\
expand-strided-metadata,finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,\
convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)";

/// The LLVM optimization level of every kernel (the on-disk cache's keys name it).
pub(crate) const OPT_LEVEL: i32 = 3;

/// A failed MLIR step, with MLIR's diagnostics.
#[derive(Debug)]
pub(crate) struct MlirFailure {
    pub(crate) stage: &'static str,
    pub(crate) diagnostics: String,
}

/// The MLIR context and the diagnostics it reports, reused across compilations (setting up a
/// context with every dialect costs ~10 ms).
pub(crate) struct MlirSession {
    context: Context,
    diagnostics: Arc<Mutex<Vec<String>>>,
}

// SAFETY: an `MlirSession` is only ever used by one thread at a time (the `Jit` keeps it
// behind a mutex); MLIR contexts may move between threads.
unsafe impl Send for MlirSession {}

impl MlirSession {
    /// A context with all dialects, passes and LLVM translations registered.
    pub(crate) fn new() -> Self {
        static PASSES: Once = Once::new();
        PASSES.call_once(register_all_passes);
        let registry = DialectRegistry::new();
        register_all_dialects(&registry);
        let context = Context::new_with_threading(false);
        context.append_dialect_registry(&registry);
        context.load_all_available_dialects();
        register_all_llvm_translations(&context);
        let diagnostics = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&diagnostics);
        context.attach_diagnostic_handler(move |d| {
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(d.to_string());
            true
        });
        MlirSession {
            context,
            diagnostics,
        }
    }

    fn take_diagnostics(&self) -> String {
        let mut d = self.diagnostics.lock().unwrap_or_else(|e| e.into_inner());
        let text = d.join("\n");
        d.clear();
        text
    }

    fn failure(&self, stage: &'static str, detail: impl Into<String>) -> MlirFailure {
        let mut diagnostics = self.take_diagnostics();
        let detail = detail.into();
        if !detail.is_empty() {
            if !diagnostics.is_empty() {
                diagnostics.push('\n');
            }
            diagnostics.push_str(&detail);
        }
        MlirFailure { stage, diagnostics }
    }

    /// Parses `text` and runs `pipelines` on it in order; returns the resulting module.
    pub(crate) fn lower(&self, text: &str, pipelines: &[&str]) -> Result<Module<'_>, MlirFailure> {
        self.take_diagnostics();
        let mut module =
            Module::parse(&self.context, text).ok_or_else(|| self.failure("parsing", ""))?;
        for pipeline in pipelines {
            let pm = PassManager::new(&self.context);
            parse_pass_pipeline(pm.as_operation_pass_manager(), pipeline)
                .map_err(|e| self.failure("pipeline parsing", e.to_string()))?;
            pm.run(&mut module)
                .map_err(|_| self.failure("pass pipeline", format!("pipeline {pipeline}")))?;
        }
        Ok(module)
    }

    /// JIT-compiles a module in the LLVM dialect (optimization level 3, host CPU) and looks
    /// up `symbol`'s packed entry point; with `object`, also writes the machine code there
    /// as a position-independent relocatable object (what the on-disk cache links).
    pub(crate) fn jit(
        &self,
        module: &Module<'_>,
        symbol: &str,
        object: Option<&Path>,
    ) -> Result<NativeCode, MlirFailure> {
        self.jit_with_symbols(module, symbol, &[], object)
    }

    /// Like [`MlirSession::jit`], registering `extra` symbols (name, address) with the engine
    /// besides the support functions (the GPU path's runtime functions).
    pub(crate) fn jit_with_symbols(
        &self,
        module: &Module<'_>,
        symbol: &str,
        extra: &[(&str, *mut c_void)],
        object: Option<&Path>,
    ) -> Result<NativeCode, MlirFailure> {
        self.take_diagnostics();
        // `DIFFUSE_JIT_OBJECT=<path>` writes the machine code of each compiled kernel there
        // (the last one wins), for inspecting what LLVM made of it (`objdump -d`).
        let inspect = std::env::var("DIFFUSE_JIT_OBJECT").ok();
        let dumps: Vec<String> = object
            .map(|p| p.to_string_lossy().into_owned())
            .into_iter()
            .chain(inspect)
            .collect();
        // SAFETY: the module is valid; no shared libraries are passed.
        let raw = unsafe {
            mlirExecutionEngineCreate(
                module.to_raw(),
                OPT_LEVEL,
                0,
                std::ptr::null::<MlirStringRef>(),
                !dumps.is_empty(),
                object.is_some(),
            )
        };
        if raw.ptr.is_null() {
            return Err(self.failure(
                "translation to LLVM",
                "the execution engine was not created",
            ));
        }
        for &(name, address) in crate::support::symbols().iter().chain(extra) {
            // SAFETY: `raw` is live; the name outlives the call; the address is a function
            // with the signature MLIR's lowering calls it with.
            unsafe { mlirExecutionEngineRegisterSymbol(raw, string_ref(name), address) };
        }
        let mut code = NativeCode {
            owner: Owner::Engine(raw),
            entry: std::ptr::null_mut(),
        };
        let packed = format!("_mlir__mlir_ciface_{symbol}");
        // SAFETY: `raw` is a live engine; the name outlives the call.
        let entry = unsafe { mlirExecutionEngineLookup(raw, string_ref(&packed)) };
        if entry.is_null() {
            return Err(self.failure("symbol lookup", format!("no symbol {packed}")));
        }
        code.entry = entry;
        for path in &dumps {
            // SAFETY: `raw` is live; the path outlives the call.
            unsafe { mlirExecutionEngineDumpToObjectFile(raw, string_ref(path)) };
        }
        Ok(code)
    }
}

/// Compiled machine code: what owns it and the packed entry point
/// (`void entry(void **args)`, one pointer per argument).
pub(crate) struct NativeCode {
    owner: Owner,
    entry: *mut c_void,
}

/// What keeps a kernel's machine code mapped.
enum Owner {
    /// The ORC JIT that compiled it in this process.
    Engine(MlirExecutionEngine),
    /// The shared library of a kernel an earlier process compiled (see [`crate::disk`]),
    /// kept open while the code may run.
    Library { _open: libloading::Library },
}

// SAFETY: the engine is immutable after creation; its code may run on any thread and many
// threads at once (the kernels keep no state).
unsafe impl Send for NativeCode {}
unsafe impl Sync for NativeCode {}

impl NativeCode {
    /// The code at `entry` inside `library`, which stays loaded as long as the code lives.
    pub(crate) fn from_library(library: libloading::Library, entry: *mut c_void) -> Self {
        NativeCode {
            owner: Owner::Library { _open: library },
            entry,
        }
    }

    /// Runs the module's global constructors (the GPU path's module loads), once per engine.
    /// Not thread-safe: callers serialize it.
    pub(crate) fn initialize(&self) {
        if let Owner::Engine(raw) = self.owner {
            // SAFETY: `raw` is a live engine; every symbol it needs was registered at
            // creation.
            unsafe { mlirExecutionEngineInitialize(raw) }
        }
    }

    /// Calls the entry point with one memref descriptor per memref parameter (words
    /// `{allocated, aligned, offset, sizes[rank], strides[rank]}`, the rest of the array
    /// unused), then the scalars, then the `trailing` descriptors (parameters a lowering
    /// appended after the scalars).
    ///
    /// # Safety
    /// The descriptors and scalars must match the compiled function's parameters, and the
    /// memory the descriptors point at must be valid for whatever the code does with it.
    pub(crate) unsafe fn call(
        &self,
        descriptors: &mut [Descriptor],
        scalars: &[Scalar],
        trailing: &mut [Descriptor],
    ) {
        let mut scalar_slots: Vec<[u64; 2]> = scalars.iter().map(scalar_bits).collect();
        // The packed calling convention: one pointer per parameter, to its value (for a
        // memref, the pointer to a pointer to its descriptor).
        let mut descriptor_ptrs: Vec<*mut c_void> = descriptors
            .iter_mut()
            .chain(trailing.iter_mut())
            .map(|d| d.as_mut_ptr().cast())
            .collect();
        let (leading, after) = descriptor_ptrs.split_at_mut(descriptors.len());
        let mut args: Vec<*mut c_void> = leading
            .iter_mut()
            .map(|p| (p as *mut *mut c_void).cast())
            .chain(scalar_slots.iter_mut().map(|s| s.as_mut_ptr().cast()))
            .chain(after.iter_mut().map(|p| (p as *mut *mut c_void).cast()))
            .collect();
        // SAFETY: `entry` is the packed wrapper, of this type; the caller vouches for the
        // arguments.
        let f: unsafe extern "C" fn(*mut *mut c_void) = unsafe { std::mem::transmute(self.entry) };
        unsafe { f(args.as_mut_ptr()) }
    }
}

/// Words in a memref descriptor of the highest rank the IR allows: allocated and aligned
/// pointers, offset, then a size and a stride per dimension.
pub(crate) const DESCRIPTOR_WORDS: usize = 3 + 2 * diffuse_ir::MAX_DIMS;

/// A memref descriptor, inline: a rank-`r` memref uses its first `3 + 2r` words.
pub(crate) type Descriptor = [i64; DESCRIPTOR_WORDS];

/// The descriptor of a memref at `address` with `sizes` and `strides`.
pub(crate) fn descriptor(
    address: i64,
    sizes: &[i64],
    strides: impl Iterator<Item = i64>,
) -> Descriptor {
    let mut d = [0; DESCRIPTOR_WORDS];
    d[0] = address;
    d[1] = address;
    let rank = sizes.len();
    d[3..3 + rank].copy_from_slice(sizes);
    for (slot, s) in d[3 + rank..].iter_mut().zip(strides.take(rank)) {
        *slot = s;
    }
    d
}

/// A scalar's bits, in the low bytes of two words as the kernel's parameter type reads them
/// (a complex value's parts in order, as `complex<f32>` / `complex<f64>` lay them out).
fn scalar_bits(s: &Scalar) -> [u64; 2] {
    match *s {
        Scalar::F64(v) => [v.to_bits(), 0],
        Scalar::F32(v) => [u64::from(v.to_bits()), 0],
        Scalar::I64(v) => [v as u64, 0],
        Scalar::I32(v) => [u64::from(v as u32), 0],
        Scalar::Bool(v) => [u64::from(v), 0],
        Scalar::C64(z) => [
            u64::from(z.re.to_bits()) | (u64::from(z.im.to_bits()) << 32),
            0,
        ],
        Scalar::C128(z) => [z.re.to_bits(), z.im.to_bits()],
    }
}

impl Drop for NativeCode {
    fn drop(&mut self) {
        if let Owner::Engine(raw) = self.owner {
            // SAFETY: the engine was created by `mlirExecutionEngineCreate` and is dropped
            // once.
            unsafe { mlirExecutionEngineDestroy(raw) }
        }
    }
}

/// `text` as the borrowed string MLIR's C API takes (no terminating NUL; valid while `text`
/// is).
fn string_ref(text: &str) -> MlirStringRef {
    MlirStringRef {
        data: text.as_ptr().cast(),
        length: text.len(),
    }
}
