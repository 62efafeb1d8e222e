//! A compiled CPU kernel and its calling convention: one memref descriptor per parameter,
//! then the scalars, passed through the packed entry point.

use diffuse_ir::{IterationSpace, KernelSignature, MemRef, Scalar};

use crate::compiler::{descriptor, Descriptor, NativeCode};

/// A fused kernel compiled for this CPU.
pub struct CpuKernel {
    signature: KernelSignature,
    code: NativeCode,
    space: Option<IterationSpace>,
    compile_seconds: f64,
}

impl CpuKernel {
    pub(crate) fn new(
        signature: KernelSignature,
        code: NativeCode,
        space: Option<IterationSpace>,
        compile_seconds: f64,
    ) -> Self {
        CpuKernel {
            signature,
            code,
            space,
            compile_seconds,
        }
    }

    /// The kernel's one loop nest and what it asks of the sub-stores; `None` when each
    /// constituent iterates over its own output.
    pub fn iteration_space(&self) -> Option<&IterationSpace> {
        self.space.as_ref()
    }

    /// What the kernel computes.
    pub fn signature(&self) -> &KernelSignature {
        &self.signature
    }

    /// Seconds spent composing and compiling it.
    pub fn compile_seconds(&self) -> f64 {
        self.compile_seconds
    }

    /// Runs the kernel on one point task's sub-stores and scalars (every constituent's
    /// scalars, in order).
    ///
    /// # Safety
    /// Every non-null `MemRef` must describe memory valid for the kernel's accesses with its
    /// parameter's element type (reads for read parameters, reads and writes for mutated
    /// ones), not accessed by anything else while the call runs except through other
    /// read-only parameters.
    pub unsafe fn call(&self, memrefs: &[MemRef<'_>], scalars: &[Scalar]) -> Result<(), String> {
        check_arguments(&self.signature, memrefs, scalars)?;
        let mut descriptors = descriptors(&self.signature, memrefs)?;
        // SAFETY: one descriptor per memref parameter and the declared scalars (checked
        // above); memory validity is the caller's promise.
        unsafe { self.code.call(&mut descriptors, scalars, &mut []) };
        Ok(())
    }
}

/// Checks a call's arguments against `signature`, for the CPU and the GPU kernel alike: one
/// memref per parameter with its rank and no negative size, non-null unless a temporary or
/// empty, and scalars of the declared types in order.
pub(crate) fn check_arguments(
    signature: &KernelSignature,
    memrefs: &[MemRef<'_>],
    scalars: &[Scalar],
) -> Result<(), String> {
    let params = &signature.params;
    if memrefs.len() != params.len() {
        return Err(format!(
            "{} memrefs for a kernel of {} parameters",
            memrefs.len(),
            params.len()
        ));
    }
    if !scalars
        .iter()
        .map(|s| s.dtype())
        .eq(signature.scalar_types())
    {
        let types: Vec<_> = signature.scalar_types().collect();
        return Err(format!(
            "scalars {scalars:?} do not match the kernel's scalar types {types:?}"
        ));
    }
    for (i, (m, p)) in memrefs.iter().zip(params).enumerate() {
        if m.sizes.len() != p.rank || m.strides.len() != p.rank {
            return Err(format!(
                "memref {i} has rank {} but the kernel expects {}",
                m.sizes.len(),
                p.rank
            ));
        }
        if m.sizes.iter().any(|&s| s < 0) {
            return Err(format!("memref {i} has a negative size: {:?}", m.sizes));
        }
        if !p.temporary && m.ptr.is_null() && m.sizes.iter().all(|&s| s > 0) {
            return Err(format!("memref {i} is null but not a temporary"));
        }
    }
    Ok(())
}

/// The memref descriptors of a call, for the CPU and the GPU kernel alike: words
/// `{allocated, aligned, offset, sizes[rank], strides[rank]}` per parameter, with the
/// memref's pointer (null for a temporary, which is never dereferenced), offset 0, and its
/// sizes and strides. The kernel's memref types fix the innermost stride to 1: a memref
/// whose innermost stride differs where that extent exceeds 1 is refused, and one with an
/// extent of at most 1 gets stride 1 there. `memrefs` must have passed [`check_arguments`].
pub(crate) fn descriptors(
    signature: &KernelSignature,
    memrefs: &[MemRef<'_>],
) -> Result<Vec<Descriptor>, String> {
    let mut out: Vec<Descriptor> = Vec::with_capacity(memrefs.len());
    for (i, (m, p)) in memrefs.iter().zip(&signature.params).enumerate() {
        if m.sizes.len() > diffuse_ir::MAX_DIMS || m.strides.len() != m.sizes.len() {
            return Err(format!(
                "memref {i} has {} sizes and {} strides; at most {} dimensions, one stride each",
                m.sizes.len(),
                m.strides.len(),
                diffuse_ir::MAX_DIMS
            ));
        }
        if let (Some(&s), Some(&e)) = (m.strides.last(), m.sizes.last()) {
            if s != 1 && e > 1 {
                return Err(format!(
                    "memref {i} has innermost stride {s}; the kernel needs 1"
                ));
            }
        }
        let address = if p.temporary { 0 } else { m.ptr as i64 };
        let strides = m
            .strides
            .iter()
            .enumerate()
            .map(|(k, &s)| if k + 1 == p.rank { 1 } else { s });
        out.push(descriptor(address, m.sizes, strides));
    }
    Ok(out)
}
