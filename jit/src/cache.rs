//! The JIT front door: compiled kernels cached by signature, compile-time accounting, the
//! one-warning-per-signature rule for kernels that cannot be compiled, and optional
//! compilation in the background so that warm-up never waits for LLVM.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Instant;

use hashbrown::HashMap;

use crate::compiler::{MlirFailure, MlirSession, FUSE_PIPELINE, LOWER_PIPELINE};
use crate::compose::{compose, ENTRY};
use crate::disk::KernelCache;
use crate::error::JitError;
use crate::kernel::CpuKernel;
use crate::math;
use diffuse_ir::{KernelSignature, KernelTarget};

/// Counters of a [`Jit`]'s work.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JitStats {
    /// Kernels compiled successfully.
    pub kernels_compiled: u64,
    /// Kernels loaded from the on-disk cache instead (see [`KernelCache`]).
    pub kernels_loaded: u64,
    /// Signatures that could not be compiled (each falls back to native code).
    pub compile_failures: u64,
    /// Requests answered from the cache (including "still compiling").
    pub cache_hits: u64,
    /// Wall-clock seconds spent composing and compiling (or loading), failures included.
    pub compile_seconds: f64,
}

/// When kernels are compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompileMode {
    /// On first request, by the requesting thread, which waits: every fused task after the
    /// first request runs compiled code (deterministic; what tests use).
    Blocking,
    /// On a background thread: a request that misses the cache answers "not yet", the
    /// caller runs native code meanwhile, and later requests get the kernel once it is
    /// ready. Warm-up then costs what it costs without a JIT.
    ///
    /// Call [`Jit::wait_idle`] before the process exits: a compile thread still inside MLIR
    /// when the C++ static destructors run at exit aborts the process.
    Background,
}

/// What [`Jit::kernel`] has for a signature.
#[derive(Clone)]
pub enum Lookup {
    /// The compiled kernel.
    Ready(Arc<CpuKernel>),
    /// Being compiled in the background; run native code for now.
    Compiling,
    /// It cannot be compiled (logged once); run native code.
    Failed(JitError),
}

enum Entry {
    Compiling,
    Done(Result<Arc<CpuKernel>, JitError>),
}

/// Compiles fused kernels for the CPU on first request and serves them from a cache after.
pub struct Jit {
    mode: CompileMode,
    session: Mutex<Option<MlirSession>>,
    kernels: Mutex<HashMap<KernelSignature, Entry>>,
    /// Signaled whenever a background compilation finishes.
    finished: Condvar,
    queue: OnceLock<Mutex<Sender<KernelSignature>>>,
    disk: Option<KernelCache>,
    compiled: AtomicU64,
    loaded: AtomicU64,
    failures: AtomicU64,
    hits: AtomicU64,
    compile_nanos: AtomicU64,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit")
            .field("mode", &self.mode)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for Jit {
    fn default() -> Self {
        Self::new()
    }
}

impl Jit {
    /// A JIT that compiles on first request, blocking the requester.
    pub fn new() -> Self {
        Self::with_mode(CompileMode::Blocking)
    }

    /// An empty JIT; the MLIR context is created on the first compilation.
    pub fn with_mode(mode: CompileMode) -> Self {
        Jit {
            mode,
            session: Mutex::new(None),
            kernels: Mutex::new(HashMap::new()),
            finished: Condvar::new(),
            queue: OnceLock::new(),
            disk: None,
            compiled: AtomicU64::new(0),
            loaded: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            compile_nanos: AtomicU64::new(0),
        }
    }

    /// This JIT, loading kernels from `cache` that earlier processes compiled and keeping
    /// there the ones it compiles.
    pub fn with_kernel_cache(mut self, cache: KernelCache) -> Self {
        self.disk = Some(cache);
        self
    }

    /// This JIT with the on-disk cache the environment names ([`KernelCache::from_env`]:
    /// `DIFFUSE_KERNEL_CACHE`, by default `~/.cache/diffuse/kernels`), if it names one.
    pub fn with_env_kernel_cache(self) -> Self {
        match KernelCache::from_env() {
            Some(cache) => self.with_kernel_cache(cache),
            None => self,
        }
    }

    /// The on-disk cache it uses, if any.
    pub fn kernel_cache(&self) -> Option<&KernelCache> {
        self.disk.as_ref()
    }

    /// The process-wide JIT (blocking): one cache shared by every runtime in the process.
    pub fn shared() -> Arc<Jit> {
        static SHARED: OnceLock<Arc<Jit>> = OnceLock::new();
        Arc::clone(SHARED.get_or_init(|| Arc::new(Jit::new())))
    }

    /// When this JIT compiles.
    pub fn mode(&self) -> CompileMode {
        self.mode
    }

    /// The kernel for `signature`. The first request compiles it (now, or in the background
    /// for [`CompileMode::Background`], which needs `self` in an `Arc`: see
    /// [`Jit::kernel_in`]); a signature that failed once fails again from the cache without a
    /// new attempt or a new warning.
    pub fn kernel(&self, signature: &KernelSignature) -> Result<Arc<CpuKernel>, JitError> {
        match self.lookup(signature, None) {
            Lookup::Ready(k) => Ok(k),
            Lookup::Failed(e) => Err(e),
            Lookup::Compiling => Err(JitError::Unsupported {
                kernel: signature.name.clone(),
                reason: "still compiling".into(),
            }),
        }
    }

    /// Like [`Jit::kernel`] for a shared JIT: in background mode a miss is queued for the
    /// compile thread and answered [`Lookup::Compiling`].
    pub fn kernel_in(self: &Arc<Self>, signature: &KernelSignature) -> Lookup {
        self.lookup(signature, Some(self))
    }

    fn lookup(&self, signature: &KernelSignature, shared: Option<&Arc<Jit>>) -> Lookup {
        let background = match (self.mode, shared) {
            (CompileMode::Background, Some(me)) => Some(me),
            _ => None,
        };
        {
            let mut kernels = self.lock_kernels();
            match kernels.get(signature) {
                Some(Entry::Done(Ok(k))) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Lookup::Ready(Arc::clone(k));
                }
                Some(Entry::Done(Err(e))) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Lookup::Failed(e.clone());
                }
                Some(Entry::Compiling) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Lookup::Compiling;
                }
                None => {}
            }
            if let Some(me) = background {
                kernels.insert(signature.clone(), Entry::Compiling);
                drop(kernels);
                if me.enqueue(signature.clone()) {
                    return Lookup::Compiling;
                }
                // No compile thread could be started: compile here instead.
            }
        }
        match self.compile_and_record(signature) {
            Ok(k) => Lookup::Ready(k),
            Err(e) => Lookup::Failed(e),
        }
    }

    /// Waits until no background compilation is pending.
    pub fn wait_idle(&self) {
        let mut kernels = self.lock_kernels();
        while kernels.values().any(|e| matches!(e, Entry::Compiling)) {
            kernels = self
                .finished
                .wait(kernels)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The work done so far.
    pub fn stats(&self) -> JitStats {
        JitStats {
            kernels_compiled: self.compiled.load(Ordering::Relaxed),
            kernels_loaded: self.loaded.load(Ordering::Relaxed),
            compile_failures: self.failures.load(Ordering::Relaxed),
            cache_hits: self.hits.load(Ordering::Relaxed),
            compile_seconds: self.compile_nanos.load(Ordering::Relaxed) as f64 * 1e-9,
        }
    }

    fn lock_kernels(&self) -> std::sync::MutexGuard<'_, HashMap<KernelSignature, Entry>> {
        self.kernels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands `signature` to the compile thread (started on first use; it holds the JIT
    /// weakly and ends with it). False if the thread cannot be started.
    fn enqueue(self: &Arc<Self>, signature: KernelSignature) -> bool {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = channel::<KernelSignature>();
            let jit: Weak<Jit> = Arc::downgrade(self);
            let started = std::thread::Builder::new()
                .name("diffuse-jit".into())
                .spawn(move || {
                    while let Ok(sig) = rx.recv() {
                        let Some(jit) = jit.upgrade() else { break };
                        // The outcome is recorded in the cache; failures are logged there.
                        let _ = jit.compile_and_record(&sig);
                    }
                });
            if let Err(e) = started {
                tracing::warn!("cannot start the JIT's compile thread: {e}");
            }
            Mutex::new(tx)
        });
        let sent = queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(signature.clone())
            .is_ok();
        if !sent {
            self.lock_kernels().remove(&signature);
        }
        sent
    }

    /// Compiles `signature`, accounts for it, caches the outcome and wakes waiters.
    fn compile_and_record(&self, signature: &KernelSignature) -> Result<Arc<CpuKernel>, JitError> {
        let started = Instant::now();
        let outcome = self
            .compile(signature, started)
            .map(|(kernel, loaded)| (Arc::new(kernel), loaded));
        self.compile_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let outcome = outcome.map(|(kernel, loaded)| {
            let counter = if loaded { &self.loaded } else { &self.compiled };
            counter.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                kernel = %signature.name,
                seconds = kernel.compile_seconds(),
                loaded,
                "compiled"
            );
            kernel
        });
        match &outcome {
            Ok(_) => {}
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                if matches!(e, JitError::Unsupported { .. }) {
                    // A constituent without an MLIR body: native kernels are its only form.
                    tracing::debug!(kernel = %signature.name, "running native kernels: {e}");
                } else {
                    tracing::warn!(kernel = %signature.name, "running native kernels instead: {e}");
                }
            }
        }
        self.lock_kernels()
            .insert(signature.clone(), Entry::Done(outcome.clone()));
        self.finished.notify_all();
        outcome
    }

    /// The kernel for `signature`, and whether it came from the on-disk cache.
    fn compile(
        &self,
        signature: &KernelSignature,
        started: Instant,
    ) -> Result<(CpuKernel, bool), JitError> {
        let composed = compose(
            signature,
            math::prelude(KernelTarget::Host),
            KernelTarget::Host,
        )?;
        let text = composed.text;
        tracing::trace!(kernel = %signature.name, "composed MLIR:\n{text}");
        let kernel = |code| {
            CpuKernel::new(
                signature.clone(),
                code,
                composed.space.clone(),
                started.elapsed().as_secs_f64(),
            )
        };
        if let Some(code) = self.disk.as_ref().and_then(|d| d.load(&text, ENTRY)) {
            return Ok((kernel(code), true));
        }
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let session = session.get_or_insert_with(MlirSession::new);
        let mlir_error = |f: MlirFailure| JitError::Mlir {
            kernel: signature.name.clone(),
            stage: f.stage,
            diagnostics: f.diagnostics,
        };
        let composed_at = started.elapsed();
        let module = session
            .lower(&text, &[FUSE_PIPELINE, LOWER_PIPELINE])
            .map_err(mlir_error)?;
        let lowered_at = started.elapsed();
        let object = self.disk.as_ref().map(KernelCache::object_path);
        let code = session
            .jit(&module, ENTRY, object.as_deref())
            .map_err(mlir_error)?;
        if let (Some(disk), Some(object)) = (&self.disk, &object) {
            if let Err(e) = disk.keep(&text, ENTRY, object) {
                tracing::debug!(kernel = %signature.name, "not kept on disk: {e}");
            }
        }
        // Where compile time goes, for tuning the pipelines (`RUST_LOG=diffuse_jit=debug`).
        tracing::debug!(
            kernel = %signature.name,
            compose = composed_at.as_secs_f64(),
            mlir = (lowered_at - composed_at).as_secs_f64(),
            llvm = (started.elapsed() - lowered_at).as_secs_f64(),
            mlir_bytes = text.len(),
            "compile stages"
        );
        Ok((kernel(code), false))
    }
}
