//! `diffuse-jit`: turns a fused task into one machine-code kernel (Diffuse paper §6).
//!
//! Each constituent's task kind supplies an MLIR generator (the ABI is in
//! [`diffuse_ir::MlirGenerator`]'s module docs: tensors in, tensors out, so library authors add
//! generators without touching this crate). For a fused task, [`compose`](crate::compose)
//! puts the generated bodies in program order inside one function over memrefs, threading
//! values between constituents as SSA tensors; temporaries become tensors with no memory.
//! The pass pipeline then fuses the element-wise `linalg` ops (removing the temporaries),
//! bufferizes in place into the parameters, lowers to loops and LLVM, and the ORC JIT
//! compiles for the host CPU at `-O3`, where LLVM vectorizes the loops. `exp`, `log` and
//! `erf` are replaced by branch-free polynomial versions ([`math`](crate::math)) so that
//! transcendental-heavy loops vectorize too.
//!
//! [`Jit`] caches compiled kernels by [`KernelSignature`]: the canonical (alpha-renamed)
//! description of the fused task with element types, ranks, privileges and broadcast
//! dimensions, so a solver loop compiles each distinct fused task once. Anything that cannot
//! be compiled is a [`JitError`], logged once per signature; the runtime then runs the
//! constituents' native variants, which compute the same values.
//!
//! [`GpuJit`] compiles the same composed module for NVIDIA GPUs (PTX through MLIR's NVVM
//! pipeline) and launches it through the CUDA driver, opened at run time: see the `gpu`
//! module's docs. Without a GPU, compilation and PTX still work and launches report
//! [`GpuError::Unavailable`].
//!
//! Depends only on `diffuse-ir` (and MLIR through `melior`, CUDA's driver through `cudarc`).

#![warn(missing_docs)]
// Errors carry the kernel's name and MLIR's diagnostics; they are rare and cold (as in the
// workspace's other crates).
#![allow(clippy::result_large_err)]

mod cache;
mod compiler;
mod compose;
mod error;
mod gpu;
mod kernel;
mod math;
mod signature;
mod support;

pub use cache::{CompileMode, Jit, JitStats, Lookup};
pub use error::JitError;
pub use gpu::{gpu_available, GpuError, GpuInfo, GpuJit, GpuKernel, GpuTarget, PtxModule};
pub use kernel::{CpuKernel, MemRef};
pub use signature::{KernelParam, KernelSignature, KernelStep};
