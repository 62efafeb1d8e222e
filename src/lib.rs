//! `diffuse`: the facade over the pipeline (library ops -> IR -> window -> fusion -> JIT ->
//! placement -> launch plans -> backend). It re-exports the crates an application needs and
//! starts a runtime (`diffuse-runtime`) over the backend a configuration selects: the embedded
//! backend (`diffuse-embedded`) or Legion (`diffuse-legion`). The crate's binary is the
//! `diffuse` CLI (Mapple tools and the multi-process launcher). `ARCHITECTURE.md` at the
//! repository root has the picture; the project README follows (its examples are compiled
//! and run as doctests).
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
// Backends return `diffuse_ir::IrError`, which carries shapes inline by design (see the IR).
#![allow(clippy::result_large_err)]

pub mod cli_output;
mod setup;

use std::sync::Arc;

pub use diffuse_backend as backend;
pub use diffuse_backend::point::fp::{FpFlags, REPORTED_BY_DEFAULT as FP_REPORTED_BY_DEFAULT};
pub use diffuse_backend::{Backend, BackendStats, MachineShape};
pub use diffuse_device as device;
pub use diffuse_embedded as embedded;
pub use diffuse_embedded::{EmbeddedBackend, EmbeddedConfig};
pub use diffuse_ir as ir;
pub use diffuse_jit::JitStats;
pub use diffuse_legion as legion;
pub use diffuse_legion::{LegionBackend, LegionConfig};
pub use diffuse_mapper as mapper;
pub use diffuse_runtime::{placement, runtime};
pub use diffuse_runtime::{
    FlushRecord, FusionConfig, GpuKernels, MapplePlacement, Placement, Runtime, RuntimeConfig,
    DEFAULT_MIN_BLOCK,
};
pub use setup::{
    gpu_jit_for, parse_bytes, shutdown, split_backend_flags, Assembled, BackendKind, JitMode,
    Origin, Setup, SetupError, Switch, REFERENCE_GPU_CHIP,
};

/// Which backend a runtime executes on, with its settings.
#[derive(Clone, Debug)]
pub enum BackendConfig {
    /// The in-process worker pool.
    Embedded(EmbeddedConfig),
    /// The Legion runtime of this process (started by the first Legion backend, with its
    /// flags; shared by later ones).
    Legion(LegionConfig),
}

/// Starts the backend `backend` asks for.
pub fn start_backend(backend: &BackendConfig) -> Result<Arc<dyn Backend>, ir::IrError> {
    match backend {
        BackendConfig::Embedded(config) => Ok(Arc::new(EmbeddedBackend::new(config.clone())?)),
        BackendConfig::Legion(config) => Ok(Arc::new(LegionBackend::start(config)?)),
    }
}

/// A runtime over the backend `backend` asks for, with fusion, JIT and placement as
/// `runtime` says (and this machine's GPU JIT, see [`start_runtime`]).
pub fn start(backend: &BackendConfig, runtime: RuntimeConfig) -> Result<Arc<Runtime>, ir::IrError> {
    Ok(start_runtime(start_backend(backend)?, runtime))
}

/// A runtime over `backend` with `runtime`'s settings; a configuration without a GPU JIT
/// gets this machine's ([`gpu_jit_for`]) when the backend has GPUs.
pub fn start_runtime(backend: Arc<dyn Backend>, mut runtime: RuntimeConfig) -> Arc<Runtime> {
    if runtime.gpu.is_none() {
        runtime.gpu = gpu_jit_for(backend.as_ref());
    }
    Arc::new(Runtime::new(backend, runtime))
}

/// A [`ir::Context`] over a new embedded backend with the default runtime: fusion on with an
/// adaptive window, the process-wide JIT, default placement.
pub fn embedded(config: EmbeddedConfig) -> Result<ir::Context, ir::IrError> {
    embedded_with(config, RuntimeConfig::default())
}

/// A [`ir::Context`] over a new embedded backend with the runtime `runtime` describes.
pub fn embedded_with(
    config: EmbeddedConfig,
    runtime: RuntimeConfig,
) -> Result<ir::Context, ir::IrError> {
    let runtime = start(&BackendConfig::Embedded(config), runtime)?;
    Ok(ir::Context::new(runtime))
}
