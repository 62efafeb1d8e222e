//! `diffuse`: the runtime that wires the pipeline (library ops -> IR -> window -> fusion ->
//! JIT -> mapper -> backend) and the embedded backend.
//!
//! So far the pipeline is IR -> embedded backend: every submitted index task executes as
//! submitted, its point tasks spread over a pool of worker processors. Later stages (window
//! and fusion, JIT, Mapple placement, Legion) slot in between without changing the
//! [`diffuse_ir::Context`] that libraries use. The project README follows (its example is
//! compiled and run as a doctest).
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
// Backends return `diffuse_ir::IrError`, which carries shapes inline by design (see the IR).
#![allow(clippy::result_large_err)]

pub mod embedded;
pub mod placement;
pub mod runtime;

use std::sync::Arc;

pub use diffuse_ir as ir;
pub use embedded::{EmbeddedBackend, EmbeddedConfig, MemoryStats};
pub use placement::{MapplePlacement, Placement};
pub use runtime::{Backend, FlushRecord, FusionConfig, Runtime};

/// A [`diffuse_ir::Context`] over a new embedded backend, with the window and fusion that
/// `config.fusion` asks for (on, with an adaptive window, by default).
pub fn embedded(config: EmbeddedConfig) -> Result<ir::Context, ir::IrError> {
    let fusion = config.fusion;
    let backend = Arc::new(EmbeddedBackend::new(config)?);
    Ok(ir::Context::new(Arc::new(Runtime::new(backend, fusion))))
}
