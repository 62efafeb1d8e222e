//! The GPU path: the same composed module as the CPU kernel, lowered through MLIR's NVVM
//! pipeline to PTX, loaded and launched through the CUDA driver API (`cudarc`, opened at run
//! time, so building and testing never need CUDA).
//!
//! Compilation ([`GpuJit::kernel`]) needs no GPU: it composes the module with
//! [`compose`](crate::compose) and a device math prelude, fuses and bufferizes it like the
//! CPU path, maps the parallel loops to a grid of 256-thread blocks along the innermost
//! dimension, outlines them into kernels, and lowers those to PTX for the target chip
//! (`sm_90` unless a different device is present) and the host function to LLVM, which the
//! ORC JIT compiles with this crate's implementations of MLIR's GPU runtime calls. So the
//! PTX ([`GpuKernel::ptx`], [`GpuJit::ptx_for`]) and the host code can be produced and
//! checked on any machine.
//!
//! A launch ([`GpuKernel::launch`]) needs a GPU: the first one loads the PTX (the driver
//! JIT-compiles it for the device); each one copies the sub-stores the kernel reads to device
//! memory (packed: strided host rows become a dense device array), runs the host function,
//! which computes the grid from the sizes and launches each outlined kernel, copies the
//! mutated sub-stores back into their host strides and frees the device memory. Every
//! failure — no driver, no device, a PTX the driver rejects, a launch or a kernel fault — is
//! a [`GpuError`], so the caller can run the CPU kernel instead.
//!
//! What runs on the GPU: element-wise loop nests that fuse completely (temporaries removed),
//! with broadcasting, scalars, and the math functions of the device prelude (`exp`, `log`,
//! `erf` from the CPU's polynomial prelude, `sqrt`, `fabs`, `floor`, `ceil`, `trunc`,
//! `round`, `fma`, `copysign` as single instructions; `f64` and `f32`). Reductions, kernels
//! that keep a temporary in memory, and other math functions are reported as
//! [`JitError::Unsupported`] at compile time.

mod driver;
mod math;
mod pipeline;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use diffuse_ir::{Privilege, Scalar};
use hashbrown::HashMap;
use thiserror::Error;

use crate::compiler::{MlirFailure, MlirSession, NativeCode};
use crate::compose::{compose, ENTRY};
use crate::error::JitError;
use crate::kernel::check_arguments;
use diffuse_ir::{KernelSignature, MemRef};

/// The GPU a launch would run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    /// The device's name, as the driver reports it.
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0) for an H100.
    pub compute_capability: (i32, i32),
    /// Device memory in bytes.
    pub memory_bytes: usize,
}

impl GpuInfo {
    /// The LLVM chip name of the device, e.g. `sm_90`.
    pub fn chip(&self) -> String {
        let (major, minor) = self.compute_capability;
        format!("sm_{major}{minor}")
    }
}

/// The GPU of this machine (device 0), or why there is none: no CUDA driver library, no
/// device, or a driver that fails to initialize. Never panics; cheap after the first call.
pub fn gpu_available() -> Result<GpuInfo, String> {
    driver::device().map(|d| GpuInfo {
        name: d.name.clone(),
        compute_capability: d.compute_capability,
        memory_bytes: d.memory_bytes,
    })
}

/// Why a GPU kernel could not run (compilation failures are [`JitError`]s, wrapped in
/// [`GpuError::Compile`] where a launch path reports them).
#[derive(Debug, Error, Clone)]
pub enum GpuError {
    /// No usable GPU on this machine (the reason from [`gpu_available`]).
    #[error("no GPU: {0}")]
    Unavailable(String),
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
    /// The CUDA driver reported a failure: loading the PTX, allocating or copying memory, a
    /// launch, or a fault while the kernel ran.
    #[error("GPU kernel {kernel} failed: {reason}")]
    Driver {
        /// The fused task's name.
        kernel: String,
        /// The driver's error and what was being done.
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

    /// The device's chip when a GPU is present, otherwise `sm_90` (H100/H200).
    pub fn detect() -> Self {
        match gpu_available() {
            Ok(info) => Self::for_chip(&info.chip()),
            Err(_) => Self::for_chip("sm_90"),
        }
    }
}

/// Compiles fused kernels for the GPU on first request and serves them from a cache after
/// (compilation needs no GPU; see the module docs).
pub struct GpuJit {
    target: GpuTarget,
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

impl Default for GpuJit {
    fn default() -> Self {
        Self::new()
    }
}

impl GpuJit {
    /// A GPU JIT for this machine's device ([`GpuTarget::detect`]).
    pub fn new() -> Self {
        Self::with_target(GpuTarget::detect())
    }

    /// A GPU JIT for `target`, e.g. `GpuTarget::for_chip("sm_90")` to produce PTX for an
    /// H100 on a machine without one.
    pub fn with_target(target: GpuTarget) -> Self {
        GpuJit {
            target,
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
        let prelude = math::device_prelude(crate::math::prelude());
        let text = compose(signature, &prelude)?.text;
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
        let rank = signature.params.iter().map(|p| p.rank).max().unwrap_or(0);
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let session = session.get_or_insert_with(MlirSession::new);
        // Mapped and outlined: check that the host only launches.
        let outlined = session
            .lower(&text, &[&pipeline::front_pipeline(rank)])
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
            .jit_with_symbols(&lowered, ENTRY, &driver::symbols())
            .map_err(mlir_error)?;
        Ok(GpuKernel {
            signature: signature.clone(),
            code,
            ptx,
            loaded: Mutex::new(None),
            compile_seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// A fused kernel compiled for the GPU: PTX plus the host function that launches it.
pub struct GpuKernel {
    signature: KernelSignature,
    code: NativeCode,
    ptx: Vec<PtxModule>,
    /// The outcome of loading the PTX on the device (first launch).
    loaded: Mutex<Option<Result<(), String>>>,
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

    /// Seconds spent composing and compiling it (PTX and host code; the driver's PTX JIT at
    /// the first launch is not included).
    pub fn compile_seconds(&self) -> f64 {
        self.compile_seconds
    }

    /// Runs the kernel on the GPU for one point task: the same arguments as
    /// [`CpuKernel::call`](crate::CpuKernel::call), in host memory. The sub-stores the kernel
    /// reads are copied to the device, the mutated ones back, before this returns.
    ///
    /// # Safety
    /// As for `CpuKernel::call`: every non-null `MemRef` must describe host memory valid for
    /// reads (every parameter the kernel reads) and writes (every mutated parameter) of its
    /// element type at every index of its sizes and strides, not accessed by anything else
    /// during the call except through other read-only parameters.
    pub unsafe fn launch(
        &self,
        memrefs: &[MemRef<'_>],
        scalars: &[Scalar],
    ) -> Result<(), GpuError> {
        let kernel = &self.signature.name;
        let arguments = |reason: String| GpuError::Arguments {
            kernel: kernel.clone(),
            reason,
        };
        let driver_error = |reason: String| GpuError::Driver {
            kernel: kernel.clone(),
            reason,
        };
        check_arguments(&self.signature, memrefs, scalars).map_err(arguments)?;
        let device = driver::device().map_err(GpuError::Unavailable)?;
        device.bind().map_err(driver_error)?;
        let stream = driver::Stream::new().map_err(driver_error)?;
        let mut launch = driver::Launch::enter(&stream);
        self.load(&mut launch).map_err(driver_error)?;

        // Device copies of the sub-stores, packed densely.
        let params = &self.signature.params;
        let mut buffers: Vec<Option<driver::DeviceBuffer>> = Vec::with_capacity(params.len());
        let mut descriptors: Vec<Vec<i64>> = Vec::with_capacity(params.len());
        let mut staging: Vec<Vec<u8>> = Vec::new();
        // Dropped before the buffers and staging areas: no copy or kernel still uses them
        // when they are freed, on every path out of here.
        let _drain = driver::Drain(&stream);
        for (m, p) in memrefs.iter().zip(params) {
            let element = p.dtype.size_bytes();
            let count: i64 = m.sizes.iter().product::<i64>().max(0);
            let bytes = count as usize * element;
            let dense = dense_strides(m.sizes);
            let buffer = if p.temporary || bytes == 0 || m.ptr.is_null() {
                None
            } else {
                let b = driver::DeviceBuffer::new(bytes).map_err(driver_error)?;
                if p.privilege != Privilege::Write {
                    // SAFETY: the caller vouches for the host memory; `b` holds `bytes`.
                    unsafe {
                        match host_bytes(m, element) {
                            Some(slice) => stream.upload(b.ptr, slice),
                            None => {
                                staging.push(pack(m, element, bytes));
                                stream.upload(b.ptr, staging.last().expect("just pushed"))
                            }
                        }
                    }
                    .map_err(driver_error)?;
                }
                Some(b)
            };
            let address = buffer.as_ref().map_or(0, |b| b.ptr as i64);
            let mut d = Vec::with_capacity(3 + 2 * p.rank);
            d.extend([address, address, 0]);
            d.extend_from_slice(m.sizes);
            d.extend_from_slice(&dense);
            descriptors.push(d);
            buffers.push(buffer);
        }

        // The host function: grid sizes from the descriptors, one launch per kernel.
        // SAFETY: the descriptors describe device memory, which the host function only passes
        // to kernels (`check_host`).
        unsafe { self.call_host(&mut descriptors, scalars) };
        if let Some(e) = launch.take_error() {
            return Err(driver_error(e));
        }

        // Mutated sub-stores back to the host.
        let mut downloads: Vec<(usize, Vec<u8>)> = Vec::new();
        for (i, ((m, p), buffer)) in memrefs.iter().zip(params).zip(&buffers).enumerate() {
            let Some(buffer) = buffer else { continue };
            if !p.privilege.mutates() {
                continue;
            }
            let element = p.dtype.size_bytes();
            // SAFETY: the caller vouches for the host memory; the buffer holds the packed
            // sub-store; the stream is synchronized below, before anything reads `dst`.
            unsafe {
                match host_bytes_mut(m, element) {
                    Some(dst) => stream.download(dst, buffer.ptr),
                    None => {
                        let count: i64 = m.sizes.iter().product();
                        downloads.push((i, vec![0u8; count as usize * element]));
                        let dst = &mut downloads.last_mut().expect("just pushed").1;
                        stream.download(dst, buffer.ptr)
                    }
                }
            }
            .map_err(driver_error)?;
        }
        stream.synchronize().map_err(driver_error)?;
        for (i, packed) in downloads {
            // SAFETY: as above.
            unsafe { unpack(&memrefs[i], params[i].dtype.size_bytes(), &packed) };
        }
        Ok(())
    }

    /// Calls the host function with one descriptor (`{allocated, aligned, offset, sizes,
    /// strides}`) per parameter and the scalars.
    ///
    /// # Safety
    /// The descriptors must match the parameters; the memory they point at must be valid for
    /// whatever the compiled code does with it.
    unsafe fn call_host(&self, descriptors: &mut [Vec<i64>], scalars: &[Scalar]) {
        // SAFETY: as the caller promises.
        unsafe { self.code.call(descriptors, scalars) };
    }

    /// Tests only: runs the host function against placeholder runtime functions (no driver,
    /// no device, null device pointers) and returns the runtime calls it made.
    #[cfg(test)]
    fn dry_run(&self, sizes: &[&[i64]], scalars: &[Scalar]) -> Result<Vec<String>, String> {
        let mut launch = driver::Launch::dry_run();
        self.load(&mut launch)?;
        let mut descriptors: Vec<Vec<i64>> = sizes
            .iter()
            .map(|s| {
                let mut d = vec![0, 0, 0];
                d.extend_from_slice(s);
                d.extend(dense_strides(s));
                d
            })
            .collect();
        // SAFETY: the host function only passes the (null) pointers to the placeholder launch.
        unsafe { self.call_host(&mut descriptors, scalars) };
        match launch.take_error() {
            Some(e) => Err(e),
            None => Ok(launch.calls()),
        }
    }

    /// Loads the PTX on the device (the engine's global constructors), once; a failure is
    /// final for this kernel.
    fn load(&self, launch: &mut driver::Launch) -> Result<(), String> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if loaded.is_none() {
            self.code.initialize();
            *loaded = Some(launch.take_error().map_or(Ok(()), Err));
        }
        loaded.clone().unwrap_or(Ok(()))
    }
}

/// Row-major strides of a dense array of `sizes`.
fn dense_strides(sizes: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; sizes.len()];
    for k in (0..sizes.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * sizes[k + 1].max(1);
    }
    strides
}

/// The sub-store's bytes as one slice when it is dense in host memory (strides of
/// dimensions with extent above 1 equal the dense ones), else `None`.
///
/// # Safety
/// `m` must describe valid host memory.
unsafe fn host_bytes<'a>(m: &MemRef<'a>, element: usize) -> Option<&'a [u8]> {
    let count: i64 = m.sizes.iter().product();
    is_dense(m).then(|| {
        // SAFETY: a dense sub-store is `count` consecutive elements from `ptr`.
        unsafe { std::slice::from_raw_parts(m.ptr, count as usize * element) }
    })
}

/// Like [`host_bytes`], mutable.
///
/// # Safety
/// `m` must describe valid host memory, writable and not otherwise borrowed.
unsafe fn host_bytes_mut<'a>(m: &MemRef<'a>, element: usize) -> Option<&'a mut [u8]> {
    let count: i64 = m.sizes.iter().product();
    is_dense(m).then(|| {
        // SAFETY: as above; the caller vouches for exclusive access.
        unsafe { std::slice::from_raw_parts_mut(m.ptr, count as usize * element) }
    })
}

fn is_dense(m: &MemRef<'_>) -> bool {
    let dense = dense_strides(m.sizes);
    m.sizes
        .iter()
        .zip(m.strides.iter().zip(&dense))
        .all(|(&size, (&s, &d))| size <= 1 || s == d)
}

/// Visits the host byte offset of every innermost row of `m` (row length `sizes[r-1]`
/// elements, contiguous), in row-major order.
fn for_each_row(m: &MemRef<'_>, element: usize, mut f: impl FnMut(isize)) {
    let rank = m.sizes.len();
    if rank == 0 {
        f(0);
        return;
    }
    if m.sizes.contains(&0) {
        return;
    }
    let outer = &m.sizes[..rank - 1];
    let mut index = vec![0i64; rank - 1];
    loop {
        let offset: i64 = index.iter().zip(m.strides).map(|(&i, &s)| i * s).sum();
        f(offset as isize * element as isize);
        let mut k = rank - 1;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            index[k] += 1;
            if index[k] < outer[k] {
                break;
            }
            index[k] = 0;
        }
    }
}

fn row_bytes(m: &MemRef<'_>, element: usize) -> usize {
    m.sizes.last().map_or(1, |&s| s as usize) * element
}

/// The sub-store packed densely (row-major).
///
/// # Safety
/// `m` must describe valid host memory.
unsafe fn pack(m: &MemRef<'_>, element: usize, bytes: usize) -> Vec<u8> {
    let row = row_bytes(m, element);
    let mut out = Vec::with_capacity(bytes);
    for_each_row(m, element, |offset| {
        // SAFETY: every row of the sub-store is valid host memory (the caller's promise).
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(m.ptr.offset(offset), row) })
    });
    out
}

/// Writes a densely packed sub-store back into its host strides.
///
/// # Safety
/// `m` must describe valid, writable host memory.
unsafe fn unpack(m: &MemRef<'_>, element: usize, packed: &[u8]) {
    let row = row_bytes(m, element);
    let mut at = 0;
    for_each_row(m, element, |offset| {
        // SAFETY: as above; `packed` holds every row in order.
        unsafe {
            std::ptr::copy_nonoverlapping(packed[at..at + row].as_ptr(), m.ptr.offset(offset), row)
        };
        at += row;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_sub_stores_pack_and_unpack_row_by_row() {
        // A 3 x 4 block at (1, 2) of a 5 x 7 row-major buffer of f64.
        let mut host: Vec<f64> = (0..35).map(f64::from).collect();
        let (sizes, strides) = ([3i64, 4], [7i64, 1]);
        let m = MemRef {
            ptr: host[9..].as_mut_ptr().cast(),
            sizes: &sizes,
            strides: &strides,
        };
        assert!(!is_dense(&m));
        // SAFETY: the block lies inside `host`.
        let packed = unsafe { pack(&m, 8, 96) };
        let values: Vec<f64> = packed
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let expected: Vec<f64> = (0..3)
            .flat_map(|i| (0..4).map(move |j| f64::from(9 + 7 * i + j)))
            .collect();
        assert_eq!(values, expected);
        let doubled: Vec<u8> = values
            .iter()
            .flat_map(|v| (2.0 * v).to_le_bytes())
            .collect();
        // SAFETY: as above.
        unsafe { unpack(&m, 8, &doubled) };
        for (k, v) in host.iter().enumerate() {
            let (i, j) = (k / 7, k % 7);
            let inside = (1..4).contains(&i) && (2..6).contains(&j);
            assert_eq!(*v, if inside { 2.0 * k as f64 } else { k as f64 }, "at {k}");
        }
    }

    /// `out = x * s` over 2-d f64 stores.
    struct Scale;

    impl diffuse_ir::MlirGenerator for Scale {
        fn generate(
            &self,
            symbol: &str,
            _sig: &diffuse_ir::MlirSignature<'_>,
        ) -> Result<String, diffuse_ir::KernelError> {
            let map = "affine_map<(d0, d1) -> (d0, d1)>";
            Ok(format!(
                "func.func private @{symbol}(%x: tensor<?x?xf64>, %out: tensor<?x?xf64>, %s: f64) -> tensor<?x?xf64> {{
  %r = linalg.generic {{indexing_maps = [{map}, {map}], iterator_types = [\"parallel\", \"parallel\"]}}
      ins(%x : tensor<?x?xf64>) outs(%out : tensor<?x?xf64>) {{
  ^bb0(%a: f64, %o: f64):
    %y = arith.mulf %a, %s : f64
    linalg.yield %y : f64
  }} -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}}"
            ))
        }
    }

    fn scale_signature() -> KernelSignature {
        use diffuse_ir::{DType, TaskKind};
        let kind = TaskKind::lookup("gpu_unit.scale").unwrap_or_else(|| {
            TaskKind::builder("gpu_unit.scale")
                .arg("x", DType::F64, Privilege::Read)
                .arg("out", DType::F64, Privilege::Write)
                .scalar(DType::F64)
                .elementwise()
                .mlir(Arc::new(Scale))
                .register(|_| Ok(()))
                .expect("registers")
        });
        let param = |store, privilege| crate::KernelParam {
            dtype: DType::F64,
            rank: 2,
            privilege,
            temporary: false,
            store,
            unit_dims: 0,
        };
        KernelSignature {
            name: "scale".into(),
            steps: vec![crate::KernelStep {
                kind,
                bindings: vec![(0, Privilege::Read), (1, Privilege::Write)],
            }],
            params: vec![param(0, Privilege::Read), param(1, Privilege::Write)],
        }
    }

    #[test]
    fn the_host_code_loads_the_ptx_once_and_launches_a_grid_over_the_sizes() {
        let jit = GpuJit::with_target(GpuTarget::for_chip("sm_90"));
        let kernel = jit.kernel(&scale_signature()).expect("compiles");
        let (rows, cols) = (3i64, 1000i64);
        let sizes: [&[i64]; 2] = [&[rows, cols], &[rows, cols]];
        let calls = kernel
            .dry_run(&sizes, &[Scalar::F64(2.0)])
            .expect("dry run");
        // The global constructor loads the PTX (opt level 3, as compiled); the call gets the
        // kernel, makes a stream, launches rows x ceil(cols / 256) blocks of 1 x 256 threads
        // with two rank-2 memrefs (3 + 2 * 2 words each), the two extents and the scalar, and
        // synchronizes.
        let kernel_name = &kernel.ptx()[0].name;
        assert_eq!(
            calls,
            vec![
                "mgpuModuleLoadJIT(O3, entry: true)".to_string(),
                format!("mgpuModuleGetFunction({kernel_name})"),
                "mgpuStreamCreate".into(),
                "mgpuLaunchKernel(grid [3, 4, 1], block [1, 256, 1], 17 parameters)".into(),
                "mgpuStreamSynchronize".into(),
                "mgpuStreamDestroy".into(),
            ]
        );
        // The module is loaded once per kernel, not per call.
        let again = kernel
            .dry_run(&sizes, &[Scalar::F64(2.0)])
            .expect("dry run");
        assert_eq!(again.len(), 5, "{again:?}");
        assert!(again[0].starts_with("mgpuModuleGetFunction"), "{again:?}");
        // An empty sub-store still goes through the host code; the launch (empty grid) is
        // skipped by the runtime.
        let empty: [&[i64]; 2] = [&[0, cols], &[0, cols]];
        let calls = kernel
            .dry_run(&empty, &[Scalar::F64(2.0)])
            .expect("dry run");
        assert!(
            calls.iter().any(|c| c.contains("grid [0, 4, 1]")),
            "{calls:?}"
        );
    }

    #[test]
    fn density_ignores_the_strides_of_unit_dimensions() {
        let mut x = [0u8; 8];
        let mut dense = |sizes: &[i64], strides: &[i64]| {
            is_dense(&MemRef {
                ptr: x.as_mut_ptr(),
                sizes,
                strides,
            })
        };
        assert!(dense(&[1, 5], &[99, 1]));
        assert!(dense(&[4, 5], &[5, 1]));
        assert!(!dense(&[4, 5], &[6, 1]));
        assert!(dense(&[], &[]));
        assert_eq!(dense_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(dense_strides(&[2, 0, 4]), vec![4, 4, 1]);
    }
}
