//! The JIT front door: compiled kernels cached by signature, compile-time accounting, and the
//! one-warning-per-signature rule for kernels that cannot be compiled.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hashbrown::HashMap;

use crate::compiler::{MlirSession, FUSE_PIPELINE, LOWER_PIPELINE};
use crate::compose::{compose, ENTRY};
use crate::error::JitError;
use crate::kernel::CpuKernel;
use crate::math;
use crate::signature::KernelSignature;

/// Counters of a [`Jit`]'s work.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JitStats {
    /// Kernels compiled successfully.
    pub kernels_compiled: u64,
    /// Signatures that could not be compiled (each falls back to native code).
    pub compile_failures: u64,
    /// Requests answered from the cache.
    pub cache_hits: u64,
    /// Wall-clock seconds spent composing and compiling, failures included.
    pub compile_seconds: f64,
}

type Outcome = Result<Arc<CpuKernel>, JitError>;

/// Compiles fused kernels for the CPU on first request and serves them from a cache after.
pub struct Jit {
    session: Mutex<Option<MlirSession>>,
    kernels: Mutex<HashMap<KernelSignature, Outcome>>,
    failing: Mutex<Vec<String>>,
    compiled: AtomicU64,
    failures: AtomicU64,
    hits: AtomicU64,
    compile_nanos: AtomicU64,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit").field("stats", &self.stats()).finish()
    }
}

impl Default for Jit {
    fn default() -> Self {
        Self::new()
    }
}

impl Jit {
    /// An empty JIT; the MLIR context is created on the first compilation.
    pub fn new() -> Self {
        Jit {
            session: Mutex::new(None),
            kernels: Mutex::new(HashMap::new()),
            failing: Mutex::new(Vec::new()),
            compiled: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            compile_nanos: AtomicU64::new(0),
        }
    }

    /// The process-wide JIT: one cache shared by every runtime in the process.
    pub fn shared() -> Arc<Jit> {
        static SHARED: std::sync::OnceLock<Arc<Jit>> = std::sync::OnceLock::new();
        Arc::clone(SHARED.get_or_init(|| Arc::new(Jit::new())))
    }

    /// The kernel for `signature`, compiled now if it was never requested. A signature that
    /// failed once fails again from the cache without a new attempt or a new warning.
    pub fn kernel(&self, signature: &KernelSignature) -> Result<Arc<CpuKernel>, JitError> {
        if let Some(outcome) = self.lock_kernels().get(signature) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return outcome.clone();
        }
        let started = Instant::now();
        let outcome = self.compile(signature, started).map(Arc::new);
        self.compile_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        match &outcome {
            Ok(_) => {
                self.compiled.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(kernel = %signature.name, "running native kernels instead: {e}");
            }
        }
        self.lock_kernels()
            .insert(signature.clone(), outcome.clone());
        outcome
    }

    /// The work done so far.
    pub fn stats(&self) -> JitStats {
        JitStats {
            kernels_compiled: self.compiled.load(Ordering::Relaxed),
            compile_failures: self.failures.load(Ordering::Relaxed),
            cache_hits: self.hits.load(Ordering::Relaxed),
            compile_seconds: self.compile_nanos.load(Ordering::Relaxed) as f64 * 1e-9,
        }
    }

    /// Makes every future compilation of a kernel with a constituent whose kind name
    /// contains `kind_name` fail, to exercise the native fallback.
    pub fn inject_failure(&self, kind_name: impl Into<String>) {
        self.failing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(kind_name.into());
    }

    fn lock_kernels(&self) -> std::sync::MutexGuard<'_, HashMap<KernelSignature, Outcome>> {
        self.kernels.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn compile(&self, signature: &KernelSignature, started: Instant) -> Result<CpuKernel, JitError> {
        let injected = self
            .failing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|k| signature.steps.iter().any(|s| s.kind.name().contains(k.as_str())));
        if injected {
            return Err(JitError::Injected {
                kernel: signature.name.clone(),
            });
        }
        let text = compose(signature, math::prelude())?;
        tracing::debug!(kernel = %signature.name, "composed MLIR:\n{text}");
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let session = session.get_or_insert_with(MlirSession::new);
        let mlir_error = |f: crate::compiler::MlirFailure| JitError::Mlir {
            kernel: signature.name.clone(),
            stage: f.stage,
            diagnostics: f.diagnostics,
        };
        let module = session
            .lower(&text, &[FUSE_PIPELINE, LOWER_PIPELINE])
            .map_err(mlir_error)?;
        let code = session.jit(&module, ENTRY).map_err(mlir_error)?;
        Ok(CpuKernel::new(
            signature.clone(),
            code,
            started.elapsed().as_secs_f64(),
        ))
    }
}
