//! `HostMemory`: an array's elements handed over to NumPy without a copy.

use diffuse_ir::{DType, HostBlock};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// The elements of an array that moved to NumPy, in the host buffer that held its store
/// ([`diffuse_array::Array::take_host`]). NumPy views them through `__array_interface__`
/// (`numpy.asarray(memory)`), and the NumPy array keeps this object, and so the buffer,
/// alive.
#[pyclass(module = "diffuse._native", frozen)]
pub struct HostMemory {
    block: HostBlock,
    shape: Vec<i64>,
}

impl HostMemory {
    /// The memory of `block`, seen as an array of `shape` (which `block` holds exactly).
    pub(crate) fn new(block: HostBlock, shape: Vec<i64>) -> Self {
        HostMemory { block, shape }
    }
}

/// NumPy's type string of `dtype` (`"<f8"`): byte order, kind and size.
fn type_string(dtype: DType) -> String {
    let (kind, order) = match dtype {
        DType::F64 | DType::F32 => ('f', true),
        DType::I64 | DType::I32 => ('i', true),
        DType::Bool => ('b', false),
        DType::C64 | DType::C128 => ('c', true),
    };
    let order = match (order, cfg!(target_endian = "little")) {
        (false, _) => '|',
        (true, true) => '<',
        (true, false) => '>',
    };
    format!("{order}{kind}{}", dtype.size_bytes())
}

#[pymethods]
impl HostMemory {
    /// NumPy's array interface (version 3): the shape, the type string and the address of
    /// the writable, C-contiguous elements.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let interface = PyDict::new(py);
        interface.set_item("shape", PyTuple::new(py, self.shape.iter().copied())?)?;
        interface.set_item("typestr", type_string(self.block.dtype()))?;
        interface.set_item("data", (self.block.as_ptr() as usize, false))?;
        interface.set_item("version", 3)?;
        Ok(interface)
    }
}
