//! `diffuse._native`: the diffuse array and sparse libraries as a Python extension module.
//!
//! This layer is deliberately thin: arrays ([`NativeArray`]) and CSR matrices
//! ([`NativeCsr`]) with the operations the Rust libraries implement, data in and out as raw
//! bytes, and errors as Python exceptions. NumPy's semantics (dtype promotion, broadcasting
//! messages, indexing, fallbacks) live in the Python package `diffuse.numpy` above it.
//!
//! One runtime serves the process, started on first use as the environment's `DIFFUSE_*`
//! variables say: the settings of [`diffuse::Setup`], one variable per flag of the apps
//! (`DIFFUSE_BACKEND`, `DIFFUSE_PROCS`, `DIFFUSE_FUSION`, `DIFFUSE_JIT`, `DIFFUSE_GPU`,
//! `DIFFUSE_MIN_BLOCK`, `DIFFUSE_MAPPER`, ...; the table is in `src/setup.rs` of the
//! `diffuse` crate). A variable with a value its setting does not take is a `RuntimeError`
//! naming it.

mod array;
mod convert;
mod errors;
mod functions;
mod host;
mod runtime;
mod sparse;
mod trace;

use pyo3::prelude::*;

pub use array::NativeArray;
pub use host::HostMemory;
pub use sparse::NativeCsr;
pub use trace::NativeRecording;

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The runtime's warnings (a kernel that failed to compile and runs natively, a failed
    // window) go to stderr, as from the applications; `RUST_LOG=debug` shows every window's
    // fusion decisions. A process that installed its own subscriber keeps it.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    m.add_class::<NativeArray>()?;
    m.add_class::<NativeCsr>()?;
    m.add_class::<HostMemory>()?;
    m.add_class::<NativeRecording>()?;
    m.add_function(wrap_pyfunction!(trace::start_recording, m)?)?;
    m.add_function(wrap_pyfunction!(trace::finish_recording, m)?)?;
    m.add_function(wrap_pyfunction!(trace::replay_signature, m)?)?;
    m.add_function(wrap_pyfunction!(trace::refuse_replay, m)?)?;
    m.add_function(wrap_pyfunction!(trace::unrecorded, m)?)?;
    m.add_function(wrap_pyfunction!(functions::from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::report_fp_categories, m)?)?;
    m.add_function(wrap_pyfunction!(functions::zeros_, m)?)?;
    m.add_function(wrap_pyfunction!(functions::full_, m)?)?;
    m.add_function(wrap_pyfunction!(functions::arange_, m)?)?;
    m.add_function(wrap_pyfunction!(functions::linspace_, m)?)?;
    m.add_function(wrap_pyfunction!(functions::random_, m)?)?;
    m.add_function(wrap_pyfunction!(functions::where_, m)?)?;
    m.add_function(wrap_pyfunction!(functions::concatenate_, m)?)?;
    m.add_function(wrap_pyfunction!(functions::roll_, m)?)?;
    m.add_function(wrap_pyfunction!(functions::tile_, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::flush, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::tasks_submitted, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::runtime_stats, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(sparse::krylov_solve, m)?)?;
    Ok(())
}
