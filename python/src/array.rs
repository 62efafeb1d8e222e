//! `NativeArray`: an array of the array library (any view of a store) and its operations.

use diffuse_array::{ArgOp, Array, Dense, Operand, Orientation, SliceArg, StridedView};
use diffuse_ir::{with_element_type, Element, PendingUse, ReductionOp, Tuple, View};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PySlice, PySliceMethods, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::convert::{binary_op, dtype_name, dtype_of, scalar_of, unary_op};
use crate::errors::py_err;
use crate::host::HostMemory;
use crate::runtime::report_fp_errors;

/// A diffuse array (any view of a store).
#[pyclass(module = "diffuse._native", frozen)]
pub struct NativeArray {
    pub(crate) inner: Array,
}

pub(crate) fn wrap(inner: Array) -> NativeArray {
    NativeArray { inner }
}

/// The number of `a`'s elements in the `nbytes` bytes of host memory at `address` that `op`
/// copies to or from, or a `ValueError` when they are not exactly `a`'s elements of `T`.
fn host_buffer_len<T>(op: &str, a: &Array, address: usize, nbytes: usize) -> PyResult<usize> {
    let len = a.size();
    if nbytes != len * std::mem::size_of::<T>() || (len > 0 && address == 0) {
        return Err(PyValueError::new_err(format!(
            "{op}: {nbytes} bytes at {address:#x} given for {len} elements of {}",
            dtype_name(a.dtype())
        )));
    }
    Ok(len)
}

/// `index` (one int per dimension of `a`, negative from the end) made non-negative, or
/// NumPy's `IndexError` naming the axis.
fn element_index(a: &Array, mut index: Vec<i64>) -> PyResult<Vec<i64>> {
    let shape = a.shape();
    if index.len() != shape.dims() {
        return Err(PyIndexError::new_err(format!(
            "{} indices given for an array of {} dimensions",
            index.len(),
            shape.dims()
        )));
    }
    for (axis, (i, &n)) in index.iter_mut().zip(shape.as_slice()).enumerate() {
        if !(-n..n).contains(i) {
            return Err(PyIndexError::new_err(format!(
                "index {i} is out of bounds for axis {axis} with size {n}"
            )));
        }
        if *i < 0 {
            *i += n;
        }
    }
    Ok(index)
}

#[pymethods]
impl NativeArray {
    /// The shape, as a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape().as_slice().iter().copied())
    }

    /// The number of elements (the product of the shape, without building its tuple).
    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// NumPy's name of the dtype.
    #[getter]
    fn dtype(&self) -> &'static str {
        dtype_name(self.inner.dtype())
    }

    /// Copies the elements, row-major and native-endian, into the `nbytes` bytes of host
    /// memory at `address` (a fresh C-contiguous NumPy array of this dtype and shape:
    /// `numpy.asarray` in one copy), waiting for the work that writes them.
    ///
    /// The caller guarantees that `address` is valid for writes of `nbytes` bytes and stays
    /// alive during the call; a size other than the array's is refused.
    fn read_into(&self, py: Python<'_>, address: usize, nbytes: usize) -> PyResult<()> {
        with_element_type!(self.inner.dtype(), T => {
            let len = host_buffer_len::<T>("read_into", &self.inner, address, nbytes)?;
            if len > 0 {
                // SAFETY: the caller guarantees `nbytes` writable bytes at `address`, which
                // is exactly `len` elements of `T` (checked above); NumPy's buffers are
                // aligned for their dtype.
                let out = unsafe { std::slice::from_raw_parts_mut(address as *mut T, len) };
                py.detach(|| self.inner.read_into(out)).map_err(py_err)?;
            }
        });
        report_fp_errors(py)
    }

    /// The elements, handed over without a copy (`numpy.asarray` of the result views them)
    /// when this array is its whole store and the backend holds that store in one host
    /// buffer, after the work that uses it; `None` otherwise (copy with `read_into`). The
    /// caller uses this array no more: the elements are NumPy's from now on.
    fn take_host(&self, py: Python<'_>) -> PyResult<Option<HostMemory>> {
        let block = py.detach(|| self.inner.take_host()).map_err(py_err)?;
        report_fp_errors(py)?;
        let shape = self.inner.shape().as_slice().to_vec();
        Ok(block.map(|block| HostMemory::new(block, shape)))
    }

    /// Overwrites the elements with the `nbytes` bytes of host memory at `address` (a
    /// C-contiguous NumPy array of this dtype and shape), ordered after the work that uses
    /// this array's store: a small NumPy value written into a computed array without a
    /// task. The caller guarantees that `address` is valid for reads of `nbytes` bytes;
    /// a size other than the array's is refused.
    fn write_from(&self, py: Python<'_>, address: usize, nbytes: usize) -> PyResult<()> {
        with_element_type!(self.inner.dtype(), T => {
            let len = host_buffer_len::<T>("write_from", &self.inner, address, nbytes)?;
            let values: Vec<T> = if len == 0 {
                Vec::new()
            } else {
                // SAFETY: the caller guarantees `nbytes` readable bytes at `address`, exactly
                // `len` elements of `T` of this array's dtype (checked above), aligned as
                // NumPy aligns its buffers.
                unsafe { std::slice::from_raw_parts(address as *const T, len) }.to_vec()
            };
            py.detach(|| self.inner.write_from(values)).map_err(py_err)?;
        });
        report_fp_errors(py)
    }

    /// The element at `index` (one int per dimension, negative from the end) as a Python
    /// number, read without a task: it waits only for work that writes this array's store.
    fn element<'py>(&self, py: Python<'py>, index: Vec<i64>) -> PyResult<Bound<'py, PyAny>> {
        let a = &self.inner;
        let index = element_index(a, index)?;
        let value = with_element_type!(a.dtype(), T => {
            py.detach(|| a.element::<T>(&index)).map_err(py_err)?.into_bound_py_any(py)?
        });
        report_fp_errors(py)?;
        Ok(value)
    }

    /// Stores the Python scalar `value` (converted as NumPy's assignment does) at `index`
    /// (as `element`'s) without a task, after the work that uses this array's store.
    fn set_element(
        &self,
        py: Python<'_>,
        index: Vec<i64>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let a = &self.inner;
        let index = element_index(a, index)?;
        let scalar = scalar_of(value, a.dtype())?;
        with_element_type!(a.dtype(), T => {
            let value = T::from_scalar(scalar).ok_or_else(|| {
                PyValueError::new_err(format!("set_element: {scalar:?} is not a {}", dtype_name(a.dtype())))
            })?;
            py.detach(|| a.set_element::<T>(&index, value)).map_err(py_err)?;
        });
        report_fp_errors(py)
    }

    /// What buffered work still does with this array's store: "nothing", "reads" or
    /// "writes" (a host copy need not wait, a read need not wait, every copy waits).
    fn pending_use(&self) -> &'static str {
        match self.inner.pending_use() {
            PendingUse::Nothing => "nothing",
            PendingUse::Reads => "reads",
            PendingUse::Writes => "writes",
        }
    }

    /// The store elements a `gather_strided` with the same arguments selects, as raw
    /// native-endian bytes, read without a task (for small selections: a row, a column).
    fn read_strided<'py>(
        &self,
        py: Python<'py>,
        shape: Vec<i64>,
        offset: i64,
        strides: Vec<i64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let view = StridedView {
            shape,
            offset,
            strides,
        };
        with_element_type!(self.inner.dtype(), T => {
            let values = py.detach(|| self.inner.read_strided::<T>(&view)).map_err(py_err)?;
            report_fp_errors(py)?;
            // SAFETY: the element types are plain old data (bool is one byte, 0 or 1); the
            // slice covers exactly the vector's initialized elements.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    values.as_ptr() as *const u8,
                    std::mem::size_of_val(values.as_slice()),
                )
            };
            // Fallible (MemoryError), where `PyBytes::new` panics when Python cannot
            // allocate the object.
            PyBytes::new_with(py, bytes.len(), |buf| {
                buf.copy_from_slice(bytes);
                Ok(())
            })
        })
    }

    /// The single element as a Python number.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = &self.inner;
        // float32 and int32 elements become Python floats and ints, as NumPy's `item`.
        let value = with_element_type!(a.dtype(), T => {
            py.detach(|| a.item::<T>()).map_err(py_err)?.into_bound_py_any(py)?
        });
        report_fp_errors(py)?;
        Ok(value)
    }

    /// `op(self)` element-wise.
    fn unary(&self, op: &str) -> PyResult<NativeArray> {
        diffuse_array::unary(unary_op(op)?, &self.inner)
            .map(wrap)
            .map_err(py_err)
    }

    /// `op(self, other)` element-wise, broadcasting.
    fn binary(&self, op: &str, other: &NativeArray) -> PyResult<NativeArray> {
        diffuse_array::binary(binary_op(op)?, &self.inner, &other.inner)
            .map(wrap)
            .map_err(py_err)
    }

    /// `op(self, value)` element-wise (`op(value, self)` when `reflected`), the scalar in
    /// the array's dtype.
    #[pyo3(signature = (op, value, reflected = false))]
    fn binary_scalar(
        &self,
        op: &str,
        value: &Bound<'_, PyAny>,
        reflected: bool,
    ) -> PyResult<NativeArray> {
        let scalar = Operand::Scalar(scalar_of(value, self.inner.dtype())?);
        let op = binary_op(op)?;
        let result = if reflected {
            diffuse_array::binary(op, scalar, &self.inner)
        } else {
            diffuse_array::binary(op, &self.inner, scalar)
        };
        result.map(wrap).map_err(py_err)
    }

    /// A copy converted to `dtype`.
    fn astype(&self, dtype: &str) -> PyResult<NativeArray> {
        self.inner
            .astype(dtype_of(dtype)?)
            .map(wrap)
            .map_err(py_err)
    }

    /// The view `[start, stop)` per dimension (aliases this array).
    fn slice(&self, bounds: Vec<(i64, i64)>) -> PyResult<NativeArray> {
        let spec: Vec<SliceArg> = bounds
            .into_iter()
            .map(|(start, stop)| SliceArg {
                start: Some(start),
                stop: Some(stop),
            })
            .collect();
        self.inner.slice(&spec).map(wrap).map_err(py_err)
    }

    /// The view `key` selects when it is step-1 slices of the leading dimensions (`a[1:-1,
    /// :]`, `a[2:]`: the hot case of stencils), with NumPy's bounds: clipped to the array,
    /// empty where a stop falls before its start, the dimensions after the key whole. None
    /// for any other key (the Python layer indexes those).
    fn box_view(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<NativeArray>> {
        let shape = self.inner.shape();
        let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
            Ok(tuple) => tuple.iter().collect(),
            Err(_) => vec![key.clone()],
        };
        if items.len() > shape.dims() {
            return Ok(None);
        }
        let mut spec = Vec::with_capacity(shape.dims());
        for (item, &extent) in items.iter().zip(shape.as_slice()) {
            let Ok(slice) = item.cast::<PySlice>() else {
                return Ok(None);
            };
            let bounds = slice.indices(extent as isize)?;
            if bounds.step != 1 {
                return Ok(None);
            }
            let (start, stop) = (bounds.start as i64, bounds.stop as i64);
            spec.push(SliceArg {
                start: Some(start),
                stop: Some(stop.max(start)),
            });
        }
        spec.resize(
            shape.dims(),
            SliceArg {
                start: None,
                stop: None,
            },
        );
        self.inner
            .slice(&spec)
            .map(|view| Some(wrap(view)))
            .map_err(py_err)
    }

    /// Where the array lies in its store: `(store shape, offset of the view, store id)`.
    /// Views of one store share the id.
    fn layout<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyTuple>, u64)> {
        let store = self.inner.store();
        Ok((
            PyTuple::new(py, store.shape().as_slice().iter().copied())?,
            PyTuple::new(py, self.inner.view().offset().as_slice().iter().copied())?,
            store.id().0,
        ))
    }

    /// How many arrays (views included) hold the store this array is a view of.
    #[getter]
    fn store_handles(&self) -> usize {
        self.inner.store().app_handles()
    }

    /// The id of the store the array is a view of.
    #[getter]
    fn store_id(&self) -> u64 {
        self.inner.store().id().0
    }

    /// The box `[offset, offset + shape)` of this array's store, in store coordinates
    /// (aliases this array's store).
    fn window(&self, offset: Vec<i64>, shape: Vec<i64>) -> PyResult<NativeArray> {
        let store = self.inner.store();
        let bad = |e: diffuse_ir::IrError| PyValueError::new_err(e.to_string());
        let view = View::new(
            store,
            Tuple::new(&offset).map_err(bad)?,
            Tuple::shape(&shape).map_err(bad)?,
        )
        .map_err(bad)?;
        Ok(wrap(Array::from_view(self.inner.context(), view)))
    }

    /// A new array of the store elements `offset + sum(strides[d] * i[d])` (row-major
    /// positions in this array's whole store) for `i` in `shape`.
    fn gather_strided(
        &self,
        shape: Vec<i64>,
        offset: i64,
        strides: Vec<i64>,
    ) -> PyResult<NativeArray> {
        let view = StridedView {
            shape,
            offset,
            strides,
        };
        self.inner.gather_strided(&view).map(wrap).map_err(py_err)
    }

    /// Writes `values` (of `shape`) into the store elements a `gather_strided` with the same
    /// arguments reads.
    fn scatter_strided(
        &self,
        shape: Vec<i64>,
        offset: i64,
        strides: Vec<i64>,
        values: &NativeArray,
    ) -> PyResult<()> {
        let view = StridedView {
            shape,
            offset,
            strides,
        };
        self.inner
            .scatter_strided(&view, &values.inner)
            .map_err(py_err)
    }

    /// NumPy's `a[i0, i1, ...]` with one int64 index array per dimension (broadcast
    /// together): a new array of the indices' shape.
    fn gather_indexed(&self, indices: Vec<PyRef<'_, NativeArray>>) -> PyResult<NativeArray> {
        let indices: Vec<&Array> = indices.iter().map(|a| &a.inner).collect();
        self.inner
            .gather_indexed(&indices)
            .map(wrap)
            .map_err(py_err)
    }

    /// NumPy's `a[i0, i1, ...] = values` (values of this dtype, broadcast to the indices'
    /// shape; the last of repeated positions stays).
    fn scatter_indexed(
        &self,
        indices: Vec<PyRef<'_, NativeArray>>,
        values: &NativeArray,
    ) -> PyResult<()> {
        let indices: Vec<&Array> = indices.iter().map(|a| &a.inner).collect();
        self.inner
            .scatter_indexed(&indices, &values.inner)
            .map_err(py_err)
    }

    /// Writes `src` (broadcast) into this array's elements.
    fn assign(&self, src: &NativeArray) -> PyResult<()> {
        self.inner.assign(&src.inner).map_err(py_err)
    }

    /// Writes a scalar into every element.
    fn assign_scalar(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let scalar = scalar_of(value, self.inner.dtype())?;
        self.inner.assign(Operand::Scalar(scalar)).map_err(py_err)
    }

    /// The elements where the boolean `mask` (of this shape) holds, row-major (NumPy's
    /// `a[mask]`; reads the mask's count back).
    fn select(&self, py: Python<'_>, mask: &NativeArray) -> PyResult<NativeArray> {
        py.detach(|| self.inner.select(&mask.inner))
            .map(wrap)
            .map_err(py_err)
    }

    /// NumPy's `nonzero` of this boolean array: one int64 index array per dimension
    /// (reads the count back).
    fn nonzero(&self, py: Python<'_>) -> PyResult<Vec<NativeArray>> {
        py.detach(|| self.inner.nonzero())
            .map(|v| v.into_iter().map(wrap).collect())
            .map_err(py_err)
    }

    /// The cumulative sum (`op` "sum") or product ("prod") along `axis`.
    fn cumulate(&self, op: &str, axis: usize) -> PyResult<NativeArray> {
        let op = match op {
            "sum" => ReductionOp::Sum,
            "prod" => ReductionOp::Prod,
            other => return Err(PyValueError::new_err(format!("no cumulative {other}"))),
        };
        self.inner.cumulate(op, axis).map(wrap).map_err(py_err)
    }

    /// The values along `axis` in NumPy's ascending order (`indices`: their int64
    /// positions along the axis, a stable `argsort`).
    #[pyo3(signature = (axis, indices = false))]
    fn sort(&self, axis: usize, indices: bool) -> PyResult<NativeArray> {
        let sorted = if indices {
            self.inner.argsort_along(axis)
        } else {
            self.inner.sort_along(axis)
        };
        sorted.map(wrap).map_err(py_err)
    }

    /// The int64 insertion positions of `values` in this sorted 1-d array (NumPy's
    /// `searchsorted`, the rightmost positions when `right`).
    fn searchsorted(&self, values: &NativeArray, right: bool) -> PyResult<NativeArray> {
        self.inner
            .searchsorted(&values.inner, right)
            .map(wrap)
            .map_err(py_err)
    }

    /// The reduction `op` (`sum`, `prod`, `max`, `min` or `mean`) of the whole array (a
    /// lazy 0-d array) or along `axis` (`keepdims` as NumPy's).
    #[pyo3(signature = (op, axis = None, keepdims = false))]
    fn reduce(&self, op: &str, axis: Option<usize>, keepdims: bool) -> PyResult<NativeArray> {
        let a = &self.inner;
        let along = |op| match axis {
            Some(axis) => a.reduce_along(op, axis, keepdims),
            None => match op {
                ReductionOp::Sum => a.sum(),
                ReductionOp::Prod => a.prod(),
                ReductionOp::Max => a.max(),
                ReductionOp::Min => a.min(),
            },
        };
        match (op, axis) {
            ("sum", _) => along(ReductionOp::Sum),
            ("prod", _) => along(ReductionOp::Prod),
            ("max", _) => along(ReductionOp::Max),
            ("min", _) => along(ReductionOp::Min),
            ("mean", Some(axis)) => a.mean_along(axis, keepdims),
            ("mean", None) => a.mean(),
            (other, _) => {
                return Err(PyValueError::new_err(format!(
                    "no native reduction {other}"
                )))
            }
        }
        .map(wrap)
        .map_err(py_err)
    }

    /// `argmax`/`argmin` (`op`) of the whole array (the row-major index, a lazy 0-d int64
    /// array) or along `axis`.
    #[pyo3(signature = (op, axis = None, keepdims = false))]
    fn arg(&self, op: &str, axis: Option<usize>, keepdims: bool) -> PyResult<NativeArray> {
        let op = match op {
            "argmax" => ArgOp::Max,
            "argmin" => ArgOp::Min,
            other => return Err(PyValueError::new_err(format!("no arg reduction {other}"))),
        };
        let a = &self.inner;
        match (axis, op) {
            (Some(axis), _) => a.arg_along(op, axis, keepdims),
            (None, ArgOp::Max) => a.argmax(),
            (None, ArgOp::Min) => a.argmin(),
        }
        .map(wrap)
        .map_err(py_err)
    }

    /// The dot product of two vectors, as a 0-d array.
    fn dot(&self, other: &NativeArray) -> PyResult<NativeArray> {
        self.inner.dot(&other.inner).map(wrap).map_err(py_err)
    }

    /// Matrix-vector product.
    fn matvec(&self, x: &NativeArray) -> PyResult<NativeArray> {
        self.inner.matvec(&x.inner).map(wrap).map_err(py_err)
    }

    /// Matrix-matrix product.
    fn matmul(&self, b: &NativeArray) -> PyResult<NativeArray> {
        self.inner.matmul(&b.inner).map(wrap).map_err(py_err)
    }

    /// The dense linear-algebra operation `op` (`cholesky`, `inv`, `det`, `solve`, whose
    /// right-hand sides are `rhs`, `qr`, `qr_complete`, `eigh`, `svd` or `svd_thin`) of this
    /// float matrix, on one point: the results (a list, in NumPy's order) and a one-element
    /// int64 status (0 factored, 1 not positive definite, singular, or not converged).
    #[pyo3(signature = (op, rhs = None))]
    fn dense(
        &self,
        op: &str,
        rhs: Option<&NativeArray>,
    ) -> PyResult<(Vec<NativeArray>, NativeArray)> {
        let op = match op {
            "cholesky" => Dense::Cholesky,
            "inv" => Dense::Inverse,
            "det" => Dense::Determinant,
            "solve" => Dense::Solve,
            "qr" => Dense::Qr { complete: false },
            "qr_complete" => Dense::Qr { complete: true },
            "eigh" => Dense::Eigh,
            "svd" => Dense::Svd { full: true },
            "svd_thin" => Dense::Svd { full: false },
            other => {
                return Err(PyValueError::new_err(format!(
                    "no dense operation {other:?} (cholesky, inv, det, solve, qr, \
                     qr_complete, eigh, svd, svd_thin)"
                )))
            }
        };
        let (results, status) = self
            .inner
            .dense(op, rhs.map(|b| &b.inner))
            .map_err(py_err)?;
        Ok((results.into_iter().map(wrap).collect(), wrap(status)))
    }

    /// `op(self) @ op(b)` (`b` a matrix or a vector), each matrix transposed in place when
    /// its flag says so: `A.T @ B` without a copy of `A.T`.
    fn matmul_oriented(
        &self,
        b: &NativeArray,
        self_transposed: bool,
        b_transposed: bool,
    ) -> PyResult<NativeArray> {
        let oriented = |transposed: bool| {
            if transposed {
                Orientation::Transposed
            } else {
                Orientation::AsStored
            }
        };
        self.inner
            .matmul_with(oriented(self_transposed), &b.inner, oriented(b_transposed))
            .map(wrap)
            .map_err(py_err)
    }
}
