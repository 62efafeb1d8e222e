//! The process's one runtime: started on first use from the environment (see the crate's
//! documentation for the variables), the module's functions about it (flush, shutdown,
//! statistics), and the floating-point exceptions its work raised, reported as NumPy's error
//! state says.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use diffuse_array::ArrayContext;
use diffuse_ir::Context;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::py_err;

/// The process's runtime once the array context has started (for what the context does not
/// expose: the backend's floating-point exception record).
pub(crate) static RUNTIME: OnceLock<std::sync::Arc<diffuse::Runtime>> = OnceLock::new();

/// The process's array context, or why it could not start.
pub(crate) fn context() -> PyResult<&'static ArrayContext> {
    static CX: OnceLock<Result<ArrayContext, String>> = OnceLock::new();
    CX.get_or_init(start)
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(e.clone()))
}

/// Starts diffuse as the environment's `DIFFUSE_*` variables say ([`diffuse::Setup`], the
/// same settings as the apps' flags), with the floating-point exceptions Python reports.
fn start() -> Result<ArrayContext, String> {
    let setup = diffuse::Setup::from_env().map_err(|e| e.to_string())?;
    let runtime = setup.start().map_err(|e| e.to_string())?.runtime;
    runtime
        .backend()
        .attribute_fp_errors(diffuse::FpFlags::from_bits(
            FP_REPORTED.load(Ordering::Relaxed),
        ));
    let _ = RUNTIME.set(runtime.clone());
    Ok(ArrayContext::new(Context::new(runtime)))
}

/// Executes everything submitted so far (the window flushes); nothing before the runtime
/// has started.
#[pyfunction]
pub(crate) fn flush(py: Python<'_>) -> PyResult<()> {
    if RUNTIME.get().is_none() {
        return Ok(());
    }
    let cx = context()?;
    py.detach(|| cx.flush()).map_err(py_err)?;
    report_fp_errors(py)
}

/// Runs everything submitted so far and waits for kernels still compiling in the
/// background (a compile thread inside MLIR when the process exits would abort it); what
/// `diffuse` calls at interpreter exit.
#[pyfunction]
pub(crate) fn shutdown(py: Python<'_>) -> PyResult<()> {
    let flushed = flush(py);
    if let Some(jit) = RUNTIME.get().and_then(|r| r.jit()) {
        py.detach(|| jit.wait_idle());
    }
    flushed
}

/// Index tasks submitted so far in this process.
#[pyfunction]
pub(crate) fn tasks_submitted() -> PyResult<u64> {
    Ok(context()?.ir().tasks_submitted())
}

/// What the runtime has done so far, as a dict: tasks submitted and executed, their points
/// (how many of those ran a compiled kernel, how many a fused task's native kernels strip by
/// strip, and how many compiled segments between native constituents), windows
/// analysed and replayed from the memo, the window size, seconds of fusion analysis, and
/// the JIT's kernels compiled, kernels loaded from the on-disk cache, compile failures and
/// compile seconds. Empty before start.
#[pyfunction]
pub(crate) fn runtime_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let stats = PyDict::new(py);
    let Some(runtime) = RUNTIME.get() else {
        return Ok(stats);
    };
    let planner = runtime.planner_stats();
    stats.set_item("tasks_submitted", context()?.ir().tasks_submitted())?;
    stats.set_item("tasks_executed", runtime.stats().tasks_executed)?;
    let backend = runtime.stats();
    stats.set_item("points_executed", backend.points_executed)?;
    stats.set_item("compiled_points", backend.compiled_points)?;
    stats.set_item("strip_points", backend.strip_points)?;
    stats.set_item("segment_points", backend.segment_points)?;
    stats.set_item("traced_launches", backend.traced_launches)?;
    stats.set_item("store_bytes", backend.store_bytes)?;
    stats.set_item("windows_analysed", planner.analysed)?;
    stats.set_item("windows_replayed", planner.replayed)?;
    stats.set_item("window_size", runtime.window_size())?;
    stats.set_item("analysis_seconds", runtime.analysis_seconds())?;
    if let Some(jit) = runtime.jit() {
        let jit = jit.stats();
        stats.set_item("kernels_compiled", jit.kernels_compiled)?;
        stats.set_item("kernels_loaded", jit.kernels_loaded)?;
        stats.set_item("compile_failures", jit.compile_failures)?;
        stats.set_item("compile_seconds", jit.compile_seconds)?;
    }
    Ok(stats)
}

/// Hands the floating-point exceptions work raised since the last call (`(task name, bits)`:
/// divide 1, over 2, under 4, invalid 8) to `diffuse._errstate.report`, which warns, raises
/// or ignores them as NumPy's error state says. Called after everything that runs work.
pub(crate) fn report_fp_errors(py: Python<'_>) -> PyResult<()> {
    let Some(runtime) = RUNTIME.get() else {
        return Ok(());
    };
    let raised = runtime.backend().take_fp_errors();
    if raised.is_empty() {
        return Ok(());
    }
    let raised: Vec<(String, u8)> = raised
        .iter()
        .map(|(task, flags)| (task.to_string(), flags.bits()))
        .collect();
    py.import("diffuse._errstate")?
        .call_method1("report", (raised,))?;
    Ok(())
}

/// The floating-point exception categories (bits as in `report_fp_errors`) whose raising
/// the application reports: a fused kernel raising one of them is run again to say which
/// operation raised it. NumPy's default (divide, over, invalid) until set.
static FP_REPORTED: AtomicU8 = AtomicU8::new(diffuse::FP_REPORTED_BY_DEFAULT.bits());

/// Sets which floating-point exception categories the application reports (`divide` 1,
/// `over` 2, `under` 4, `invalid` 8), from NumPy's error state: exceptions of the others
/// are not attributed to single operations of fused kernels, which spares running them
/// twice (`diffuse._errstate` calls it whenever the state changes).
#[pyfunction]
pub(crate) fn report_fp_categories(bits: u8) {
    FP_REPORTED.store(bits, Ordering::Relaxed);
    if let Some(runtime) = RUNTIME.get() {
        runtime
            .backend()
            .attribute_fp_errors(diffuse::FpFlags::from_bits(bits));
    }
}
