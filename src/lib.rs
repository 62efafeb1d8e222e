//! `diffuse`: the runtime that wires the pipeline (library ops -> IR -> window -> fusion ->
//! JIT -> mapper -> backend) and the embedded backend.
//!
//! So far the pipeline is IR -> embedded backend: every submitted index task executes as
//! submitted, its point tasks spread over a pool of worker processors. Later stages (window
//! and fusion, JIT, Mapple placement, Legion) slot in between without changing the
//! [`diffuse_ir::Context`] that libraries use.
//!
//! ```
//! use diffuse::EmbeddedConfig;
//! let ctx = diffuse::embedded(EmbeddedConfig { procs: Some(2) }).unwrap();
//! let store = ctx.store_from_vec(&[3], vec![1.0f64, 2.0, 3.0]).unwrap();
//! assert_eq!(ctx.read::<f64>(&store.view()).unwrap(), vec![1.0, 2.0, 3.0]);
//! ```

#![warn(missing_docs)]
// Backends return `diffuse_ir::IrError`, which carries shapes inline by design (see the IR).
#![allow(clippy::result_large_err)]

mod dispatch;
pub mod embedded;

use std::sync::Arc;

pub use diffuse_ir as ir;
pub use embedded::{EmbeddedBackend, EmbeddedConfig, MemoryStats};

/// A [`diffuse_ir::Context`] backed by a new embedded backend.
pub fn embedded(config: EmbeddedConfig) -> Result<ir::Context, ir::IrError> {
    Ok(ir::Context::new(Arc::new(EmbeddedBackend::new(config)?)))
}
