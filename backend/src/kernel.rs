//! Compiled kernels as backends see them: something that runs one point task's fused body
//! on its sub-stores. The runtime hands backends kernels through this trait, so a backend
//! needs neither the JIT nor any device library to run them.

use diffuse_ir::{MemRef, Scalar};

/// A compiled fused kernel for one kind of processor (the host CPU or a GPU).
pub trait PointKernel: Send + Sync {
    /// Runs the kernel on one point task's sub-stores and scalars (every constituent's
    /// scalars, in order); an error says why it could not run (nothing was written then).
    ///
    /// # Safety
    /// Every non-null `MemRef` must describe memory valid for the kernel's accesses with its
    /// parameter's element type (reads for read parameters, reads and writes for mutated
    /// ones), not accessed by anything else while the call runs except through other
    /// read-only parameters.
    unsafe fn call(&self, memrefs: &[MemRef<'_>], scalars: &[Scalar]) -> Result<(), String>;
}
