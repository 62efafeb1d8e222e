//! `diffuse-runtime`: the runtime between the IR and a backend. It buffers the index tasks a
//! library submits in a window (`runtime`), asks the fusion planner which prefix runs as one
//! task, derives a launch plan per fused group once per window shape (`plans`: argument slots,
//! the JIT kernel request, the placement of every point), decides placement by default blocks
//! or a Mapple program (`placement`), and contains failures to what depends on them
//! (`poison`). It talks to backends only through the [`diffuse_backend::Backend`] trait and
//! knows no concrete backend: the `diffuse` crate pairs it with one.
#![warn(missing_docs)]
// Backends return `diffuse_ir::IrError`, which carries shapes inline by design (see the IR).
#![allow(clippy::result_large_err)]

mod kernels;
pub mod placement;
mod plans;
mod poison;
pub mod runtime;

pub use placement::{MapplePlacement, Placement};
pub use plans::GpuKernels;
pub use runtime::{FlushRecord, FusionConfig, Runtime, RuntimeConfig, DEFAULT_MIN_BLOCK};
