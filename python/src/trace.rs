//! Recording the tasks submitted through the context and replaying them over other arrays
//! (what `diffuse.trace` is built on).

use diffuse_array::{Array, ArrayError};
use diffuse_ir::{IrError, View};
use pyo3::prelude::*;

use crate::array::{wrap, NativeArray};
use crate::errors::py_err;
use crate::runtime::context;
use crate::runtime::report_fp_errors;

/// The views of `arrays`, for recording and replaying.
fn views_of(arrays: &[PyRef<'_, NativeArray>]) -> Vec<View> {
    arrays.iter().map(|a| a.inner.view().clone()).collect()
}

/// Starts recording the tasks submitted from now on, for replay with other arrays in place
/// of `inputs` (see `diffuse.trace`). Fails if a recording is open.
#[pyfunction]
pub(crate) fn start_recording(inputs: Vec<PyRef<'_, NativeArray>>) -> PyResult<()> {
    context()?
        .ir()
        .start_recording(&views_of(&inputs))
        .map_err(|e| py_err(e.into()))
}

/// Closes the open recording: `(recording, None)`, or `(None, why it cannot be replayed)`.
/// `outputs` are the arrays the recorded code produced, rebuilt by each replay.
#[pyfunction]
pub(crate) fn finish_recording(
    outputs: Vec<PyRef<'_, NativeArray>>,
) -> PyResult<(Option<NativeRecording>, Option<String>)> {
    match context()?.ir().finish_recording(&views_of(&outputs)) {
        Ok(recording) => Ok((Some(NativeRecording { recording }), None)),
        Err(IrError::NotReplayable { reason }) => Ok((None, Some(reason))),
        Err(e) => Err(py_err(e.into())),
    }
}

/// Recorded tasks (`finish_recording`), replayable over other arrays.
#[pyclass(module = "diffuse._native", frozen)]
pub struct NativeRecording {
    recording: diffuse_ir::Recording,
}

#[pymethods]
impl NativeRecording {
    /// Submits the recorded tasks again with `inputs` in place of the recorded inputs, and
    /// returns the recorded outputs over this replay's arrays; None (and nothing submitted)
    /// when the inputs are not like the recorded ones.
    fn replay(
        &self,
        py: Python<'_>,
        inputs: Vec<PyRef<'_, NativeArray>>,
    ) -> PyResult<Option<Vec<NativeArray>>> {
        let cx = context()?;
        let views = views_of(&inputs);
        // (A mismatch is a value, not an error: the caller then runs the recorded code.)
        let replayed = py.detach(|| match cx.ir().replay(&self.recording, &views) {
            Ok(outputs) => Ok(Some(outputs)),
            Err(IrError::ReplayMismatch { .. }) => Ok(None),
            Err(e) => Err(ArrayError::from(e)),
        });
        let Some(outputs) = replayed.map_err(py_err)? else {
            return Ok(None);
        };
        report_fp_errors(py)?;
        Ok(Some(
            outputs
                .into_iter()
                .map(|view| wrap(Array::from_view(cx, view)))
                .collect(),
        ))
    }

    /// The positions of the inputs a replay writes.
    #[getter]
    fn changed_inputs(&self) -> Vec<usize> {
        self.recording.changed_inputs()
    }

    /// The ids of the other stores (not inputs, not made by the replay) a replay writes.
    #[getter]
    fn changed_held(&self) -> Vec<u64> {
        self.recording
            .changed_held()
            .into_iter()
            .map(|id| id.0)
            .collect()
    }
}

/// A hash of what a recording must match in `arrays` (its inputs), to key recordings by: per
/// array its dtype, store shape, offset in the store, shape, and which array first has its
/// store. (A replay checks its inputs in full: two signatures with one hash only cost a
/// replay that is refused.)
#[pyfunction]
pub(crate) fn replay_signature(arrays: Vec<PyRef<'_, NativeArray>>) -> u64 {
    use std::hash::{Hash, Hasher};
    // Fixed keys: the same signature hashes alike for the life of the process.
    let mut hasher = std::hash::DefaultHasher::new();
    for (i, a) in arrays.iter().enumerate() {
        let view = a.inner.view();
        let id = view.store().id();
        let first = arrays[..i]
            .iter()
            .position(|b| b.inner.store().id() == id)
            .unwrap_or(i);
        (
            view.store().dtype(),
            view.store().shape(),
            view.offset(),
            view.shape(),
            first,
        )
            .hash(&mut hasher);
    }
    hasher.finish()
}

/// `f()`, with nothing it submits or creates recorded (see `Context::unrecorded`).
#[pyfunction]
pub(crate) fn unrecorded(f: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    context()?.ir().unrecorded(|| f.call0().map(Bound::unbind))
}

/// Marks the open recording, if any, unreplayable because of `reason` (what the recorded
/// code did that a replay would not repeat).
#[pyfunction]
pub(crate) fn refuse_replay(reason: &str) -> PyResult<()> {
    context()?.ir().refuse_replay(|| reason.to_string());
    Ok(())
}
