//! The JIT's kernels as the point kernels backends call ([`PointKernel`]): the runtime is
//! where the JIT and the backends meet, so neither depends on the other.

use std::sync::Arc;

use diffuse_backend::PointKernel;
use diffuse_ir::{MemRef, Scalar};
use diffuse_jit::{CpuKernel, GpuKernel};

/// A kernel the JIT compiled for the host CPU.
pub(crate) struct HostKernel(pub(crate) Arc<CpuKernel>);

impl PointKernel for HostKernel {
    unsafe fn call(&self, memrefs: &[MemRef<'_>], scalars: &[Scalar]) -> Result<(), String> {
        // SAFETY: the caller's promise, passed on unchanged.
        unsafe { self.0.call(memrefs, scalars) }
    }
}

/// A kernel the JIT built for the GPU; a call enqueues it with memrefs into device memory
/// (inside the device's launch, see [`diffuse_backend::CompiledKernel::gpu`]).
pub(crate) struct DeviceKernel(pub(crate) Arc<GpuKernel>);

impl PointKernel for DeviceKernel {
    unsafe fn call(&self, memrefs: &[MemRef<'_>], scalars: &[Scalar]) -> Result<(), String> {
        // SAFETY: the caller's promise, passed on unchanged.
        unsafe { self.0.enqueue(memrefs, scalars) }.map_err(|e| e.to_string())
    }
}
