//! Why a fused task could not get a compiled kernel.

use diffuse_ir::KernelError;
use thiserror::Error;

/// A failure to compose or compile a kernel. Every one of them is recoverable: the runtime
/// runs the constituents' native variants instead.
#[derive(Debug, Error, Clone)]
pub enum JitError {
    /// The fused task has a shape the JIT does not handle (named in `reason`).
    #[error("cannot compile {kernel}: {reason}")]
    Unsupported {
        /// The fused task's name.
        kernel: String,
        /// What is missing or not supported.
        reason: String,
    },
    /// A constituent's generator failed.
    #[error("the MLIR generator of {kind} failed: {source}")]
    Generator {
        /// The task kind.
        kind: String,
        /// The generator's error.
        #[source]
        source: KernelError,
    },
    /// MLIR rejected the composed module or a pass pipeline failed on it.
    #[error("MLIR {stage} failed for {kernel}: {diagnostics}")]
    Mlir {
        /// The fused task's name.
        kernel: String,
        /// Which step: parsing, a pipeline, translation to LLVM.
        stage: &'static str,
        /// MLIR's diagnostics.
        diagnostics: String,
    },
}
