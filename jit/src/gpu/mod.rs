//! The GPU path: the same composed module as the CPU kernel, lowered through MLIR's NVVM
//! pipeline to PTX and to host code that launches it through MLIR's GPU runtime functions
//! (`mgpuModuleLoadJIT`, `mgpuLaunchKernel`, ...), whose implementations the caller supplies
//! ([`GpuRuntime`]). This crate never talks to a GPU itself: it compiles and enqueues.
//!
//! Compilation ([`GpuJit::kernel`]) needs no GPU: it composes the module with
//! [`compose`](crate::compose) and a device math prelude, fuses and bufferizes it like the
//! CPU path, maps the parallel loops to a grid of 256-thread blocks along the innermost
//! dimension, outlines them into kernels, and lowers those to PTX for the target chip and
//! the host function to LLVM, which the ORC JIT compiles and links against the runtime
//! functions. So the PTX ([`GpuKernel::ptx`], [`GpuJit::ptx_for`]) and the host code can be
//! produced and checked on any machine.
//!
//! A call ([`GpuKernel::enqueue`]) runs the host function on the caller's thread with one
//! memref descriptor per parameter built directly from the caller's device addresses, sizes
//! and strides: the first call loads the PTX (the engine's global constructors), every call
//! computes the grid from the sizes and launches each outlined kernel. Allocation, copies,
//! streams, synchronization and failures of the device belong to the runtime functions (the
//! device layer's launch scope), not to this crate.
//!
//! What runs on the GPU: loop nests that fuse completely (temporaries removed), with
//! broadcasting, scalars, copies of sub-stores, loops over rows whose iterations are
//! independent (CSR SpMV, one row per thread; see [`host_loops`]), full reductions into 0-d
//! stores and kernels over 0-d stores only (as explicit launches, see [`launches`]), and the
//! math functions of the device prelude ([`math`]: the CPU's `exp`, `log` and `erf`, and the
//! rest of the libm the kernels use). Kernels that keep a temporary in memory,
//! reductions of other forms and other math functions are reported as
//! [`JitError::Unsupported`] at compile time. Multiplies and adds are contracted into FMAs
//! only where the source allows it (`fastmath<contract>`, as the math prelude's polynomials
//! do), as on the CPU, so element-wise results and SpMV's sums can match the CPU kernel's
//! bitwise.

mod host_loops;
mod launches;
mod pipeline;

use std::sync::{Arc, Mutex, Once};
use std::time::Instant;

use diffuse_ir::{KernelTarget, Scalar};
use hashbrown::HashMap;
use thiserror::Error;

use crate::compiler::{descriptor, Descriptor, MlirFailure, MlirSession, NativeCode};
use crate::compose::{compose, ENTRY};
use crate::error::JitError;
use crate::kernel::{check_arguments, descriptors};
use crate::math;
use diffuse_ir::{GpuRuntime, KernelSignature, MemRef};

/// Why a GPU kernel could not be enqueued (compilation failures are [`JitError`]s, wrapped
/// in [`GpuError::Compile`] where an enqueue path reports them).
#[derive(Debug, Error, Clone)]
pub enum GpuError {
    /// The kernel could not be compiled for the GPU.
    #[error(transparent)]
    Compile(#[from] JitError),
    /// The arguments do not match the kernel's signature.
    #[error("bad arguments for GPU kernel {kernel}: {reason}")]
    Arguments {
        /// The fused task's name.
        kernel: String,
        /// What does not match.
        reason: String,
    },
}

/// The PTX of one outlined GPU module of a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxModule {
    /// The `gpu.module`'s symbol (one per parallel loop nest mapped to the GPU).
    pub name: String,
    /// The PTX text (`.version`, `.target`, one `.entry` per kernel).
    pub ptx: String,
}

/// The chip and PTX ISA version kernels are compiled for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GpuTarget {
    /// LLVM NVPTX chip, e.g. `sm_90`.
    pub chip: String,
    /// PTX features, e.g. `+ptx80` (PTX 6.0, LLVM's default, cannot target sm_80 and newer).
    pub features: String,
}

impl GpuTarget {
    /// The target for `chip` (`sm_XY`), with the oldest PTX ISA version that supports it.
    pub fn for_chip(chip: &str) -> Self {
        let number: u32 = chip
            .trim_start_matches("sm_")
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .parse()
            .unwrap_or(90);
        let ptx = match number {
            120.. => 87,
            100.. => 86,
            90.. => 80,
            89 => 78,
            86..=88 => 71,
            _ => 70,
        };
        GpuTarget {
            chip: chip.to_string(),
            features: format!("+ptx{ptx}"),
        }
    }
}

/// Compiles fused kernels for the GPU on first request and serves them from a cache after
/// (compilation needs no GPU; see the module docs).
pub struct GpuJit {
    target: GpuTarget,
    runtime: GpuRuntime,
    session: Mutex<Option<MlirSession>>,
    kernels: Mutex<HashMap<KernelSignature, Result<Arc<GpuKernel>, JitError>>>,
}

impl std::fmt::Debug for GpuJit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuJit")
            .field("target", &self.target)
            .finish()
    }
}

impl GpuJit {
    /// A GPU JIT producing PTX for `target` (e.g. `GpuTarget::for_chip("sm_90")` for an
    /// H100, on any machine) and host code linked against `runtime`.
    pub fn new(target: GpuTarget, runtime: GpuRuntime) -> Self {
        GpuJit {
            target,
            runtime,
            session: Mutex::new(None),
            kernels: Mutex::new(HashMap::new()),
        }
    }

    /// What kernels are compiled for.
    pub fn target(&self) -> &GpuTarget {
        &self.target
    }

    /// The GPU kernel for `signature`, compiled on first request (a failure is cached too).
    pub fn kernel(&self, signature: &KernelSignature) -> Result<Arc<GpuKernel>, JitError> {
        if let Some(done) = self.lock_kernels().get(signature) {
            return done.clone();
        }
        let outcome = self.compile(signature).map(Arc::new);
        if let Err(e) = &outcome {
            tracing::warn!(kernel = %signature.name, "no GPU kernel: {e}");
        }
        self.lock_kernels()
            .entry(signature.clone())
            .or_insert(outcome)
            .clone()
    }

    /// The PTX of `signature`'s kernel (one module per loop nest mapped to the GPU).
    pub fn ptx_for(&self, signature: &KernelSignature) -> Result<Vec<PtxModule>, JitError> {
        Ok(self.kernel(signature)?.ptx().to_vec())
    }

    fn lock_kernels(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<KernelSignature, Result<Arc<GpuKernel>, JitError>>> {
        self.kernels.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn compile(&self, signature: &KernelSignature) -> Result<GpuKernel, JitError> {
        let started = Instant::now();
        let text = math::remainders_as_calls(
            &compose(
                signature,
                math::prelude(KernelTarget::Device),
                KernelTarget::Device,
            )?
            .text,
        );
        tracing::trace!(kernel = %signature.name, "composed MLIR for the GPU:\n{text}");
        let mlir_error = |f: MlirFailure| JitError::Mlir {
            kernel: signature.name.clone(),
            stage: f.stage,
            diagnostics: f.diagnostics,
        };
        let unsupported = |reason: String| JitError::Unsupported {
            kernel: signature.name.clone(),
            reason: format!("on the GPU: {reason}"),
        };
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let session = session.get_or_insert_with(MlirSession::new);
        let bufferized = session
            .lower(&text, &[pipeline::bufferize_pipeline()])
            .map_err(mlir_error)?;
        let bufferized_text = host_loops::to_device_loops(&bufferized.as_operation().to_string());
        drop(bufferized);
        let loops = session
            .lower(&bufferized_text, &[pipeline::LOOPS_PIPELINE])
            .map_err(mlir_error)?;
        let rank = pipeline::parallel_rank(&loops);
        let (loops_text, workspace_bytes) =
            launches::explicit_launches(&loops.as_operation().to_string());
        drop(loops);
        // Mapped and outlined: check that the host only launches.
        let outlined = session
            .lower(&loops_text, &[&pipeline::mapping_pipeline(rank)])
            .map_err(mlir_error)?;
        pipeline::check_host(&outlined).map_err(unsupported)?;
        let outlined_text = outlined.as_operation().to_string();
        drop(outlined);
        let lowered = session
            .lower(
                &outlined_text,
                &[&pipeline::nvvm_pipeline(
                    &self.target.chip,
                    &self.target.features,
                )],
            )
            .map_err(mlir_error)?;
        let ptx = pipeline::ptx_modules(&lowered);
        pipeline::check_ptx(&ptx).map_err(unsupported)?;
        let code = session
            .jit_with_symbols(&lowered, ENTRY, &self.runtime.symbols(), None)
            .map_err(mlir_error)?;
        Ok(GpuKernel {
            signature: signature.clone(),
            code,
            ptx,
            workspace_bytes,
            loaded: Once::new(),
            compile_seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// A fused kernel compiled for the GPU: PTX plus the host function that launches it.
pub struct GpuKernel {
    signature: KernelSignature,
    code: NativeCode,
    ptx: Vec<PtxModule>,
    workspace_bytes: Vec<usize>,
    /// Completed once the PTX has been loaded (the engine's global constructors ran).
    loaded: Once,
    compile_seconds: f64,
}

impl std::fmt::Debug for GpuKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuKernel")
            .field("kernel", &self.signature.name)
            .field("modules", &self.ptx.len())
            .finish()
    }
}

impl GpuKernel {
    /// What the kernel computes.
    pub fn signature(&self) -> &KernelSignature {
        &self.signature
    }

    /// The PTX of each outlined GPU module.
    pub fn ptx(&self) -> &[PtxModule] {
        &self.ptx
    }

    /// The bytes of each device workspace buffer a call takes after the parameters' memrefs
    /// (one per full reduction: its per-block partials); empty for most kernels.
    pub fn workspace_bytes(&self) -> &[usize] {
        &self.workspace_bytes
    }

    /// Seconds spent composing and compiling it (PTX and host code; the driver's PTX JIT at
    /// the first call is not included).
    pub fn compile_seconds(&self) -> f64 {
        self.compile_seconds
    }

    /// Enqueues the kernel for one point task: the same arguments as
    /// [`CpuKernel::call`](crate::CpuKernel::call), but every `ptr` is a device address,
    /// followed by one memref per [`workspace_bytes`](Self::workspace_bytes) entry (only its
    /// `ptr` is used: device memory of at least that many bytes, 256-byte aligned, which the
    /// kernel overwrites).
    /// Checks the arguments against the signature, loads the PTX on the first call, and
    /// runs the host function with one descriptor `{ptr, ptr, 0, sizes, strides}` per
    /// parameter (a temporary's is null): any outer strides, so a view into a larger device
    /// buffer is passed as it is; the innermost stride must be 1 where that extent is above
    /// one. It allocates, copies and synchronizes nothing itself: the runtime functions
    /// ([`GpuRuntime`]) enqueue the launches and record their failures.
    ///
    /// # Safety
    /// Must run inside the device's launch scope (`Device::launch` on a CUDA device), where
    /// the runtime functions find the stream and record failures; the first call of each
    /// kernel must too, since it loads the PTX. Every non-null `MemRef` must describe device
    /// memory valid for the kernel's accesses with its parameter's element type (reads for
    /// read parameters, reads and writes for mutated ones) at every index of its sizes and
    /// strides, not written by anything else until the launched kernels complete.
    pub unsafe fn enqueue(
        &self,
        memrefs: &[MemRef<'_>],
        scalars: &[Scalar],
    ) -> Result<(), GpuError> {
        let arguments = |reason: String| GpuError::Arguments {
            kernel: self.signature.name.clone(),
            reason,
        };
        let params = self.signature.params.len();
        if memrefs.len() != params + self.workspace_bytes.len() {
            return Err(arguments(format!(
                "{} memrefs for {params} parameters and {} workspaces",
                memrefs.len(),
                self.workspace_bytes.len()
            )));
        }
        let (memrefs, workspaces) = memrefs.split_at(params);
        check_arguments(&self.signature, memrefs, scalars).map_err(arguments)?;
        let mut descriptors = descriptors(&self.signature, memrefs).map_err(arguments)?;
        let mut workspace_descriptors: Vec<Descriptor> = workspaces
            .iter()
            .map(|w| descriptor(w.ptr as i64, &[launches::BLOCKS as i64], [1].into_iter()))
            .collect();
        self.loaded.call_once(|| self.code.initialize());
        // SAFETY: one descriptor per parameter and the declared scalars (checked above); the
        // host function only passes the device addresses to the kernels (`check_host`), and
        // the caller vouches for the memory and the launch scope.
        unsafe {
            self.code
                .call(&mut descriptors, scalars, &mut workspace_descriptors)
        };
        Ok(())
    }
}
