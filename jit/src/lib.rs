//! `diffuse-jit`: turns a fused task into one machine-code kernel (Diffuse paper §6).
//!
//! Each constituent's task kind supplies an MLIR generator. Its ABI is documented, with a
//! complete example, in `diffuse_ir`'s `mlir` module (see [`diffuse_ir::MlirGenerator`]):
//! a library author writes a `func.func` over tensors (and, for an element-wise kind, an
//! element function over scalars) and attaches it with `TaskKindBuilder::mlir`; nothing in
//! this crate changes. `tests/jit.rs` builds kernels from such hand-written generators.
//!
//! A fused task is composed (`compose.rs`) by one of two routes:
//! - **element route** (`elements.rs`): when every constituent has an element function and
//!   they all write one iteration space, the kernel is a single loop nest over that space
//!   whose body calls the element functions in program order. Every intermediate value,
//!   including a temporary used several times, lives in registers; inputs are read once per
//!   element. Sums and products (dot products included) join the nest on the host, their
//!   partials folded in the native kernels' order (`diffuse_ir::REDUCTION_LANES`), so a
//!   vector update and the dot product of its result read and write memory once.
//! - **tensor route**: otherwise the constituents' tensor functions are called in program
//!   order inside one function over memrefs, values flowing between them as SSA tensors
//!   (temporaries are tensors with no memory); `linalg` element-wise fusion then merges
//!   producers into consumers, and bufferization writes in place into the parameters.
//!
//! Parameters are marked `noalias` (the fusion analysis guarantees a mutated store is
//! reached through one parameter; read-only ones may overlap). The module is lowered to
//! loops and LLVM and the ORC JIT compiles it for the host CPU at `-O3`, where LLVM
//! vectorizes the loops. `exp`, `log` and `erf` become branch-free polynomials within 1 ulp
//! of glibc (`math/`, errors measured there), inlined so that transcendental-heavy loops
//! vectorize too; other math calls libm. GPU kernels take the same library, with the rest of
//! the libm they use defined in it too.
//!
//! [`Jit`] caches compiled kernels by [`KernelSignature`]: the canonical (alpha-renamed)
//! description of the fused task with element types, ranks, privileges and broadcast
//! dimensions, so a solver loop compiles each distinct fused task once. Anything that cannot
//! be compiled is a [`JitError`], logged once per signature; the runtime then runs the
//! constituents' native variants, which compute the same values. In
//! [`CompileMode::Background`] (what the apps' `--jit on` uses; the process-wide
//! [`Jit::shared`] compiles on first use) a miss is compiled on a background thread while
//! native kernels run, so warm-up never waits for LLVM; the process must then
//! [`Jit::wait_idle`] before it exits (MLIR's static destructors and a compile thread still
//! inside MLIR abort the process).
//!
//! A [`Jit`] given a [`KernelCache`] (the apps and the Python package use the one
//! `DIFFUSE_KERNEL_CACHE` names, by default `~/.cache/diffuse/kernels`; `off` turns it off)
//! keeps every CPU kernel it compiles as a shared library there and loads it in later
//! processes instead of compiling it again (`disk.rs`: keyed by everything the machine code
//! depends on, checked in full before loading).
//!
//! [`GpuJit`] compiles the same composed module for NVIDIA GPUs (PTX through MLIR's NVVM
//! pipeline) with host code that enqueues it through MLIR's GPU runtime functions, which the
//! caller supplies ([`GpuRuntime`]; the device layer owns the driver): see the `gpu` module's
//! docs. Compilation and PTX need no GPU.
//!
//! # Pitfalls found here (MLIR/LLVM 22)
//!
//! - `linalg-fuse-elementwise-ops` only fuses producers with one use; a temporary read twice
//!   stays in memory. Hence the element route.
//! - `restrict` on `bufferization.materialize_in_destination` promises nothing else reaches
//!   the memref. Combined with `eliminate-empty-tensors` and a `to_tensor` of the same memref
//!   (or a folded copy aliasing it) bufferization overwrote values still to be read; only
//!   pure outputs get it (see `compose.rs`).
//! - The inliner deletes unused private functions: math must become calls
//!   (`convert-math-to-libm`) before the first `inline`, or the prelude is gone.
//! - Bufferization may emit `memref.copy`, which lowers to a `memrefCopy` call from MLIR's
//!   runner library (not installed): `support.rs` provides it.
//! - MLIR's `ExecutionEngine` gives ORC the large code model: every polynomial coefficient in
//!   a vector loop costs `movabs` + `vbroadcastsd` (about 150 of 550 instructions per 4
//!   Black-Scholes elements). The C API cannot change it; a JIT built with the LLVM C API
//!   and the small code model would.
//! - LLVM's codegen dominates compile time (13 ms for a tiny kernel, up to 0.9 s for a
//!   50-constituent one; the optimization level hardly matters), hence background
//!   compilation and the on-disk cache.
//!
//! Depends only on `diffuse-ir` (and MLIR through `melior`; `cc` links kernels for the
//! on-disk cache).

#![warn(missing_docs)]
// Errors carry the kernel's name and MLIR's diagnostics; they are rare and cold (as in the
// workspace's other crates).
#![allow(clippy::result_large_err)]

mod cache;
mod compiler;
mod compose;
mod disk;
mod elements;
mod error;
mod gpu;
mod kernel;
mod math;
mod support;

pub use cache::{CompileMode, Jit, JitStats, Lookup};
pub use diffuse_ir::{GpuRuntime, KernelParam, KernelSignature, KernelStep, MemRef};
pub use disk::{KernelCache, CACHE_VARIABLE};
pub use error::JitError;
pub use gpu::{GpuError, GpuJit, GpuKernel, GpuTarget, PtxModule};
pub use kernel::CpuKernel;
