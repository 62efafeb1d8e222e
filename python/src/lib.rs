//! `diffuse._native`: the diffuse array and sparse libraries as a Python extension module.
//!
//! This layer is deliberately thin: arrays ([`NativeArray`]) and CSR matrices
//! ([`NativeCsr`]) with the operations the Rust libraries implement, data in and out as raw
//! bytes, and errors as Python exceptions. NumPy's semantics (dtype promotion, broadcasting
//! messages, indexing, fallbacks) live in the Python package `diffuse.numpy` above it.
//!
//! One runtime serves the process, started on first use from the environment:
//! `DIFFUSE_BACKEND` (`embedded`, default, or `legion`), `DIFFUSE_PROCS` (processors, default
//! one per core), `DIFFUSE_FUSION` (`on`, default, or `off`), `DIFFUSE_JIT` (`background`,
//! default: fused kernels compile on a background thread and run natively until ready;
//! `sync`: the first use waits for the compile; `off`) and `DIFFUSE_GPU` (`1` or `on`:
//! every task prefers a GPU, as the apps' `--gpu`, with a warning on stderr where the machine
//! has none; `0`, `off` or unset: the CPUs), `DIFFUSE_KERNEL_CACHE` (where compiled kernels
//! are kept between processes; default `~/.cache/diffuse/kernels`, `off`: nowhere) and
//! `DIFFUSE_MIN_BLOCK` (the fewest elements an
//! operation gives each processor before it uses fewer of them, default
//! [`diffuse::DEFAULT_MIN_BLOCK`]; `1`: every processor whenever it can).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use diffuse::{
    BackendConfig, EmbeddedConfig, FusionConfig, LegionConfig, MapplePlacement, Placement,
    RuntimeConfig,
};
use diffuse_array::{
    arange, full, linspace, random, zeros, ArgOp, Array, ArrayContext, ArrayError, BinaryOp,
    Distribution, Operand, SliceArg, StridedView, UnaryOp,
};
use diffuse_ir::{with_element_type, Context, DType, IrError, ReductionOp, Scalar, Tuple, View};
use diffuse_jit::{CompileMode, Jit};
use diffuse_sparse::solvers::{
    self, BiCgStab, Cg, Cgs, Krylov, Monitor, Preconditioner, SharedPreconditioner, SolveOptions,
};
use diffuse_sparse::{CsrMatrix, HostCsr, SparseError};
use pyo3::exceptions::{
    PyIndexError, PyMemoryError, PyOverflowError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PySlice, PySliceMethods, PyTuple};

/// The process's runtime once the array context has started (for what the context does not
/// expose: the backend's floating-point exception record).
static RUNTIME: OnceLock<std::sync::Arc<diffuse::Runtime>> = OnceLock::new();

/// The process's array context, or why it could not start.
fn context() -> PyResult<&'static ArrayContext> {
    static CX: OnceLock<Result<ArrayContext, String>> = OnceLock::new();
    CX.get_or_init(start)
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(e.clone()))
}

fn start() -> Result<ArrayContext, String> {
    let env = |name: &str| std::env::var(name).ok();
    let procs = match env("DIFFUSE_PROCS") {
        Some(p) => Some(
            p.parse::<usize>()
                .map_err(|_| format!("DIFFUSE_PROCS={p} is not a processor count"))?,
        ),
        None => None,
    };
    let backend = match env("DIFFUSE_BACKEND").as_deref() {
        None | Some("embedded") => {
            if let Some(p) = procs {
                diffuse::embedded::check_procs("DIFFUSE_PROCS", p).map_err(|e| e.to_string())?;
            }
            BackendConfig::Embedded(EmbeddedConfig {
                procs,
                ..Default::default()
            })
        }
        Some("legion") => BackendConfig::Legion(LegionConfig {
            cpus: procs,
            ..Default::default()
        }),
        Some(other) => {
            return Err(format!(
                "DIFFUSE_BACKEND={other}: the backends are `embedded` and `legion`"
            ))
        }
    };
    let fusion = match env("DIFFUSE_FUSION").as_deref() {
        None | Some("on") => FusionConfig::default(),
        Some("off") => FusionConfig::off(),
        Some(other) => return Err(format!("DIFFUSE_FUSION={other}: expected `on` or `off`")),
    };
    let gpu = match env("DIFFUSE_GPU").as_deref() {
        None | Some("0" | "off") => false,
        Some("1" | "on") => true,
        Some(other) => {
            return Err(format!(
                "DIFFUSE_GPU={other}: expected `1` or `on` (prefer GPUs), `0` or `off`"
            ))
        }
    };
    let backend = diffuse::start_backend(&backend).map_err(|e| e.to_string())?;
    let placement = if gpu {
        let machine = backend.machine();
        if machine.gpus_per_node == 0 {
            diffuse::cli_output::eprint_line(
                "warning: DIFFUSE_GPU is on but the backend has no GPU: fused kernels run on \
                 the CPU",
            );
        }
        let mapper = MapplePlacement::prefer_gpus(machine).map_err(|e| e.to_string())?;
        Some(Arc::new(mapper) as Arc<dyn Placement>)
    } else {
        None
    };
    let jit = match env("DIFFUSE_JIT").as_deref() {
        None | Some("background") => Some(Arc::new(
            Jit::with_mode(CompileMode::Background).with_env_kernel_cache(),
        )),
        Some("sync") => Some(Arc::new(
            Jit::with_mode(CompileMode::Blocking).with_env_kernel_cache(),
        )),
        Some("off") => None,
        Some(other) => {
            return Err(format!(
                "DIFFUSE_JIT={other}: expected `background`, `sync` or `off`"
            ))
        }
    };
    let min_block = match env("DIFFUSE_MIN_BLOCK") {
        None => diffuse::DEFAULT_MIN_BLOCK,
        Some(n) => match n.parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(format!(
                    "DIFFUSE_MIN_BLOCK={n}: expected a number of elements, at least 1"
                ))
            }
        },
    };
    let runtime = Arc::new(diffuse::Runtime::new(
        backend,
        RuntimeConfig {
            fusion,
            jit,
            placement,
            min_block,
        },
    ));
    runtime
        .backend()
        .attribute_fp_errors(diffuse::backend::point::fp::FpFlags::from_bits(
            FP_REPORTED.load(Ordering::Relaxed),
        ));
    let _ = RUNTIME.set(runtime.clone());
    Ok(ArrayContext::new(Context::new(runtime)))
}

/// A library error as the Python exception NumPy would raise for it.
fn py_err(e: ArrayError) -> PyErr {
    let message = e.to_string();
    match e {
        ArrayError::UnsupportedDType { .. } => PyTypeError::new_err(message),
        _ if message.contains("out of memory") => PyMemoryError::new_err(message),
        // An index array's element out of range, found when the gather or scatter ran.
        _ if message.contains("is out of bounds for axis") => PyIndexError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// The dtype named like NumPy's (`float64`, `float32`, `int64`, `int32`, `bool`).
fn dtype_of(name: &str) -> PyResult<DType> {
    Ok(match name {
        "float64" => DType::F64,
        "float32" => DType::F32,
        "int64" => DType::I64,
        "int32" => DType::I32,
        "bool" => DType::Bool,
        other => {
            return Err(PyTypeError::new_err(format!(
                "diffuse arrays hold float64, float32, int64, int32 or bool, not {other}"
            )))
        }
    })
}

/// NumPy's name of `dtype`.
fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F64 => "float64",
        DType::F32 => "float32",
        DType::I64 => "int64",
        DType::I32 => "int32",
        DType::Bool => "bool",
    }
}

fn unary_op(name: &str) -> PyResult<UnaryOp> {
    Ok(match name {
        "copy" => UnaryOp::Copy,
        "negative" => UnaryOp::Neg,
        "absolute" => UnaryOp::Abs,
        "exp" => UnaryOp::Exp,
        "log" => UnaryOp::Log,
        "sqrt" => UnaryOp::Sqrt,
        "erf" => UnaryOp::Erf,
        "sin" => UnaryOp::Sin,
        "cos" => UnaryOp::Cos,
        "tanh" => UnaryOp::Tanh,
        "logical_not" => UnaryOp::Not,
        "floor" => UnaryOp::Floor,
        "ceil" => UnaryOp::Ceil,
        "trunc" => UnaryOp::Trunc,
        "rint" => UnaryOp::Rint,
        "tan" => UnaryOp::Tan,
        "arcsin" => UnaryOp::Arcsin,
        "arccos" => UnaryOp::Arccos,
        "arctan" => UnaryOp::Arctan,
        "sinh" => UnaryOp::Sinh,
        "cosh" => UnaryOp::Cosh,
        "log2" => UnaryOp::Log2,
        "log10" => UnaryOp::Log10,
        "log1p" => UnaryOp::Log1p,
        "expm1" => UnaryOp::Expm1,
        "sign" => UnaryOp::Sign,
        "isnan" => UnaryOp::IsNan,
        "isinf" => UnaryOp::IsInf,
        "isfinite" => UnaryOp::IsFinite,
        "invert" => UnaryOp::Invert,
        other => return Err(PyValueError::new_err(format!("no native unary op {other}"))),
    })
}

fn binary_op(name: &str) -> PyResult<BinaryOp> {
    Ok(match name {
        "add" => BinaryOp::Add,
        "subtract" => BinaryOp::Sub,
        "multiply" => BinaryOp::Mul,
        "true_divide" => BinaryOp::Div,
        "power" => BinaryOp::Pow,
        "maximum" => BinaryOp::Maximum,
        "minimum" => BinaryOp::Minimum,
        "less" => BinaryOp::Less,
        "less_equal" => BinaryOp::LessEqual,
        "greater" => BinaryOp::Greater,
        "greater_equal" => BinaryOp::GreaterEqual,
        "equal" => BinaryOp::Equal,
        "not_equal" => BinaryOp::NotEqual,
        "logical_and" => BinaryOp::And,
        "logical_or" => BinaryOp::Or,
        "floor_divide" => BinaryOp::FloorDivide,
        "remainder" => BinaryOp::Remainder,
        "bitwise_and" => BinaryOp::BitAnd,
        "bitwise_or" => BinaryOp::BitOr,
        "bitwise_xor" => BinaryOp::BitXor,
        "left_shift" => BinaryOp::LeftShift,
        "right_shift" => BinaryOp::RightShift,
        "arctan2" => BinaryOp::Arctan2,
        other => {
            return Err(PyValueError::new_err(format!(
                "no native binary op {other}"
            )))
        }
    })
}

/// A Python number as a scalar of `dtype`.
fn scalar_of(value: &Bound<'_, PyAny>, dtype: DType) -> PyResult<Scalar> {
    Ok(match dtype {
        DType::F64 => Scalar::F64(value.extract::<f64>()?),
        DType::F32 => Scalar::F32(value.extract::<f64>()? as f32),
        DType::I64 => Scalar::I64(value.extract::<i64>()?),
        DType::I32 => {
            // Never wrapped: a value beyond int32 is NumPy's OverflowError.
            let v = value.extract::<i64>()?;
            Scalar::I32(i32::try_from(v).map_err(|_| {
                PyOverflowError::new_err(format!("Python integer {v} out of bounds for int32"))
            })?)
        }
        DType::Bool => Scalar::Bool(value.extract::<bool>()?),
    })
}

fn shape_of(shape: Vec<i64>) -> PyResult<Vec<i64>> {
    if let Some(bad) = shape.iter().find(|&&d| d < 0) {
        return Err(PyValueError::new_err(format!(
            "negative dimensions are not allowed ({bad})"
        )));
    }
    Ok(shape)
}

/// A diffuse array (any view of a store).
#[pyclass(module = "diffuse._native", frozen)]
pub struct NativeArray {
    inner: Array,
}

fn wrap(inner: Array) -> NativeArray {
    NativeArray { inner }
}

#[pymethods]
impl NativeArray {
    /// The shape, as a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape().as_slice().iter().copied())
    }

    /// NumPy's name of the dtype.
    #[getter]
    fn dtype(&self) -> &'static str {
        dtype_name(self.inner.dtype())
    }

    /// The elements, row-major, as raw native-endian bytes (waits for the work before).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        with_element_type!(self.inner.dtype(), T => {
            let values = py.detach(|| self.inner.to_vec::<T>()).map_err(py_err)?;
            report_fp_errors(py)?;
            // SAFETY: the element types are plain old data (bool is one byte, 0 or 1); the
            // slice covers exactly the vector's initialized elements.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    values.as_ptr() as *const u8,
                    values.len() * std::mem::size_of::<T>(),
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
        let value = match a.dtype() {
            DType::F64 => py
                .detach(|| a.item::<f64>())
                .map_err(py_err)?
                .into_pyobject(py)?
                .into_any(),
            DType::F32 => (py.detach(|| a.item::<f32>()).map_err(py_err)? as f64)
                .into_pyobject(py)?
                .into_any(),
            DType::I64 => py
                .detach(|| a.item::<i64>())
                .map_err(py_err)?
                .into_pyobject(py)?
                .into_any(),
            DType::I32 => (py.detach(|| a.item::<i32>()).map_err(py_err)? as i64)
                .into_pyobject(py)?
                .into_any(),
            DType::Bool => py
                .detach(|| a.item::<bool>())
                .map_err(py_err)?
                .into_pyobject(py)?
                .to_owned()
                .into_any(),
        };
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
}

/// An array of `shape` and `dtype` from row-major native-endian bytes.
#[pyfunction]
fn from_bytes(data: &[u8], shape: Vec<i64>, dtype: &str) -> PyResult<NativeArray> {
    let cx = context()?;
    let shape = shape_of(shape)?;
    let dtype = dtype_of(dtype)?;
    let count: i64 = shape.iter().product();
    let size = dtype.size_bytes();
    if data.len() as i64 != count * size as i64 {
        return Err(PyValueError::new_err(format!(
            "{} bytes cannot fill an array of shape {shape:?} and dtype {}",
            data.len(),
            dtype_name(dtype)
        )));
    }
    if dtype == DType::Bool && data.iter().any(|&b| b > 1) {
        return Err(PyValueError::new_err("bool data must be bytes 0 or 1"));
    }
    with_element_type!(dtype, T => {
        let mut values: Vec<T> = Vec::new();
        // A refused allocation is a MemoryError, not an abort in the allocator.
        values.try_reserve_exact(count as usize).map_err(|_| {
            PyMemoryError::new_err(format!("cannot allocate {} bytes for an array", data.len()))
        })?;
        // SAFETY: `data` holds exactly `count` elements of T's size (checked above), T is
        // plain old data and every bool byte is 0 or 1; the copy fills the capacity.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), values.as_mut_ptr() as *mut u8, data.len());
            values.set_len(count as usize);
        }
        Array::from_vec(cx, &shape, values).map(wrap).map_err(py_err)
    })
}

/// Zeros of `shape` and `dtype`.
#[pyfunction]
fn zeros_(shape: Vec<i64>, dtype: &str) -> PyResult<NativeArray> {
    zeros(context()?, &shape_of(shape)?, dtype_of(dtype)?)
        .map(wrap)
        .map_err(py_err)
}

/// `value` everywhere, in `dtype`.
#[pyfunction]
fn full_(shape: Vec<i64>, value: &Bound<'_, PyAny>, dtype: &str) -> PyResult<NativeArray> {
    let scalar = scalar_of(value, dtype_of(dtype)?)?;
    full(context()?, &shape_of(shape)?, scalar)
        .map(wrap)
        .map_err(py_err)
}

/// `start, start + step, ...` below `stop`.
#[pyfunction]
fn arange_(start: f64, stop: f64, step: f64, dtype: &str) -> PyResult<NativeArray> {
    arange(context()?, start, stop, step, dtype_of(dtype)?)
        .map(wrap)
        .map_err(py_err)
}

/// `num` evenly spaced values from `start` to `stop` inclusive.
#[pyfunction]
fn linspace_(start: f64, stop: f64, num: i64, dtype: &str) -> PyResult<NativeArray> {
    linspace(context()?, start, stop, num, dtype_of(dtype)?)
        .map(wrap)
        .map_err(py_err)
}

/// Random values: `uniform` on `[a, b)` or `normal` with mean `a` and deviation `b`.
#[pyfunction]
fn random_(
    shape: Vec<i64>,
    kind: &str,
    a: f64,
    b: f64,
    seed: u64,
    dtype: &str,
) -> PyResult<NativeArray> {
    let dist = match kind {
        "uniform" => Distribution::Uniform { low: a, high: b },
        "normal" => Distribution::Normal { mean: a, std: b },
        other => return Err(PyValueError::new_err(format!("no distribution {other}"))),
    };
    random(context()?, &shape_of(shape)?, dist, seed, dtype_of(dtype)?)
        .map(wrap)
        .map_err(py_err)
}

/// `where(cond, a, b)` element-wise, broadcasting.
#[pyfunction]
fn where_(cond: &NativeArray, a: &NativeArray, b: &NativeArray) -> PyResult<NativeArray> {
    diffuse_array::where_(&cond.inner, &a.inner, &b.inner)
        .map(wrap)
        .map_err(py_err)
}

/// The arrays joined along `axis` (NumPy's `concatenate`; same dtypes, checked).
#[pyfunction]
fn concatenate_(arrays: Vec<PyRef<'_, NativeArray>>, axis: usize) -> PyResult<NativeArray> {
    let refs: Vec<&Array> = arrays.iter().map(|a| &a.inner).collect();
    diffuse_array::concatenate(&refs, axis)
        .map(wrap)
        .map_err(py_err)
}

/// `a` shifted cyclically by `shift` along `axis` (NumPy's `roll` on one axis).
#[pyfunction]
fn roll_(a: &NativeArray, shift: i64, axis: usize) -> PyResult<NativeArray> {
    diffuse_array::roll(&a.inner, shift, axis)
        .map(wrap)
        .map_err(py_err)
}

/// `a` repeated `reps` times per dimension (NumPy's `tile`).
#[pyfunction]
fn tile_(a: &NativeArray, reps: Vec<i64>) -> PyResult<NativeArray> {
    diffuse_array::tile(&a.inner, &reps)
        .map(wrap)
        .map_err(py_err)
}

/// Executes everything submitted so far (the window flushes); nothing before the runtime
/// has started.
#[pyfunction]
fn flush(py: Python<'_>) -> PyResult<()> {
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
fn shutdown(py: Python<'_>) -> PyResult<()> {
    let flushed = flush(py);
    if let Some(jit) = RUNTIME.get().and_then(|r| r.jit()) {
        py.detach(|| jit.wait_idle());
    }
    flushed
}

/// Hands the floating-point exceptions work raised since the last call (`(task name, bits)`:
/// divide 1, over 2, under 4, invalid 8) to `diffuse._errstate.report`, which warns, raises
/// or ignores them as NumPy's error state says. Called after everything that runs work.
fn report_fp_errors(py: Python<'_>) -> PyResult<()> {
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
static FP_REPORTED: AtomicU8 =
    AtomicU8::new(diffuse::backend::point::fp::REPORTED_BY_DEFAULT.bits());

/// Sets which floating-point exception categories the application reports (`divide` 1,
/// `over` 2, `under` 4, `invalid` 8), from NumPy's error state: exceptions of the others
/// are not attributed to single operations of fused kernels, which spares running them
/// twice (`diffuse._errstate` calls it whenever the state changes).
#[pyfunction]
fn report_fp_categories(bits: u8) {
    FP_REPORTED.store(bits, Ordering::Relaxed);
    if let Some(runtime) = RUNTIME.get() {
        runtime
            .backend()
            .attribute_fp_errors(diffuse::backend::point::fp::FpFlags::from_bits(bits));
    }
}

/// The views of `arrays`, for recording and replaying.
fn views_of(arrays: &[PyRef<'_, NativeArray>]) -> Vec<View> {
    arrays.iter().map(|a| a.inner.view().clone()).collect()
}

/// Starts recording the tasks submitted from now on, for replay with other arrays in place
/// of `inputs` (see `diffuse.trace`). Fails if a recording is open.
#[pyfunction]
fn start_recording(inputs: Vec<PyRef<'_, NativeArray>>) -> PyResult<()> {
    context()?
        .ir()
        .start_recording(&views_of(&inputs))
        .map_err(|e| py_err(e.into()))
}

/// Closes the open recording: `(recording, None)`, or `(None, why it cannot be replayed)`.
/// `outputs` are the arrays the recorded code produced, rebuilt by each replay.
#[pyfunction]
fn finish_recording(
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
fn replay_signature(arrays: Vec<PyRef<'_, NativeArray>>) -> u64 {
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
fn unrecorded(f: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    context()?.ir().unrecorded(|| f.call0().map(Bound::unbind))
}

/// Marks the open recording, if any, unreplayable because of `reason` (what the recorded
/// code did that a replay would not repeat).
#[pyfunction]
fn refuse_replay(reason: &str) -> PyResult<()> {
    context()?.ir().refuse_replay(|| reason.to_string());
    Ok(())
}

/// Index tasks submitted so far in this process.
#[pyfunction]
fn tasks_submitted() -> PyResult<u64> {
    Ok(context()?.ir().tasks_submitted())
}

/// What the runtime has done so far, as a dict: tasks submitted and executed, their points
/// (how many of those ran a compiled kernel, how many a fused task's native kernels strip by
/// strip, and how many compiled segments between native constituents), windows
/// analysed and replayed from the memo, the window size, seconds of fusion analysis, and
/// the JIT's kernels compiled, kernels loaded from the on-disk cache, compile failures and
/// compile seconds. Empty before start.
#[pyfunction]
fn runtime_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
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

/// A CSR sparse matrix of float64 values on the runtime.
#[pyclass(module = "diffuse._native", frozen)]
pub struct NativeCsr {
    inner: CsrMatrix,
}

#[pymethods]
impl NativeCsr {
    /// The `rows x cols` matrix of CSR arrays, each as native-endian bytes (`data` float64,
    /// `indices` and `indptr` int64): row `i`'s entries are `data[indptr[i]..indptr[i + 1]]`
    /// in columns `indices[...]`. Every array is checked before it is used.
    #[new]
    fn new(data: &[u8], indices: &[u8], indptr: &[u8], shape: (i64, i64)) -> PyResult<Self> {
        let (rows, cols) = shape;
        let data = from_ne::<8, f64>(data, "data", f64::from_ne_bytes)?;
        let indices = from_ne::<8, i64>(indices, "indices", i64::from_ne_bytes)?;
        let indptr = from_ne::<8, i64>(indptr, "indptr", i64::from_ne_bytes)?;
        let host = HostCsr::from_parts(rows, cols, &indptr, &indices, &data).map_err(sparse_err)?;
        let inner = CsrMatrix::from_host(context()?, &host).map_err(sparse_err)?;
        Ok(NativeCsr { inner })
    }

    /// `A @ x` for a float64 vector `x` (one index task; lazy).
    fn matvec(&self, x: &NativeArray) -> PyResult<NativeArray> {
        self.inner.spmv(&x.inner).map(wrap).map_err(sparse_err)
    }
}

/// The values of `N`-byte elements in native-endian `bytes`, or a `ValueError` naming `what`
/// when the length is not a whole number of them (`MemoryError` when they do not fit).
fn from_ne<const N: usize, T>(
    bytes: &[u8],
    what: &str,
    convert: fn([u8; N]) -> T,
) -> PyResult<Vec<T>> {
    if !bytes.len().is_multiple_of(N) {
        return Err(PyValueError::new_err(format!(
            "{what}: {} bytes are not a whole number of {N}-byte elements",
            bytes.len()
        )));
    }
    let mut values = Vec::new();
    values
        .try_reserve_exact(bytes.len() / N)
        .map_err(|_| PyMemoryError::new_err(format!("{what}: {} bytes", bytes.len())))?;
    values.extend(bytes.chunks_exact(N).map(|chunk| {
        let mut element = [0u8; N];
        element.copy_from_slice(chunk);
        convert(element)
    }));
    Ok(values)
}

/// A sparse library error as the Python exception SciPy would raise for it (`MemoryError`
/// for memory, `TypeError` for a dtype, `ValueError` for the rest).
fn sparse_err(e: SparseError) -> PyErr {
    match e {
        SparseError::Array(e) => py_err(e),
        SparseError::Ir(ir) if matches!(*ir, IrError::OutOfMemory { .. }) => {
            PyMemoryError::new_err(ir.to_string())
        }
        e @ SparseError::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// The exception a Python preconditioner or callback raised during a solve, kept to
/// re-raise as it is once the solver has stopped on it.
type Raised = Arc<Mutex<Option<PyErr>>>;

/// Keeps `e` in `raised` and stops the solver with an error naming `what`.
fn caller_failed(raised: &Raised, what: &'static str, e: PyErr) -> SparseError {
    let reason = e.to_string();
    // A poisoned lock only means an earlier panic: the slot is still usable.
    let mut slot = raised
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    slot.get_or_insert(e);
    SparseError::Caller { what, reason }
}

/// A preconditioner written in Python: a callable from a native vector to a native vector.
struct PyPreconditioner {
    apply: Py<PyAny>,
    raised: Raised,
}

impl Preconditioner for PyPreconditioner {
    fn apply(&self, r: &Array) -> Result<Array, SparseError> {
        Python::attach(|py| {
            let z = self.apply.call1(py, (wrap(r.clone()),))?;
            let z = z.extract::<PyRef<'_, NativeArray>>(py)?;
            Ok(z.inner.clone())
        })
        .map_err(|e| caller_failed(&self.raised, "M", e))
    }
}

/// SciPy's `callback(xk)`, called with each iterate as a native vector (none: nothing).
struct PyCallback {
    callback: Option<Py<PyAny>>,
    raised: Raised,
}

impl Monitor for PyCallback {
    fn iterated(&mut self, x: &Array) -> Result<(), SparseError> {
        let Some(callback) = &self.callback else {
            return Ok(());
        };
        Python::attach(|py| callback.call1(py, (wrap(x.clone()),)).map(drop))
            .map_err(|e| caller_failed(&self.raised, "callback", e))
    }
}

/// Method `K` with `options`: the solution and SciPy's `info`.
fn solve_with<K: Krylov>(
    a: &CsrMatrix,
    b: &Array,
    options: &SolveOptions,
    monitor: &mut PyCallback,
) -> Result<(Array, i64), SparseError> {
    let solution = solvers::solve::<K>(a, b, options, monitor)?;
    Ok((solution.x().clone(), solution.info()))
}

/// Solves `a x = b` with `diffuse-sparse`'s `method` (`cg`, `bicgstab` or `cgs`) as SciPy
/// does: from `x0` (none: zeros) to `||r|| < max(atol, rtol ||b||)` or `maxiter`
/// iterations (none: 10 n), preconditioned by the matrix `m_matrix` (applied natively) or
/// the Python callable `m_apply` (native vector to native vector), calling `callback` with
/// each iterate. Returns `(x, info)`; an exception `m_apply` or `callback` raised is raised
/// again.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (method, a, b, x0, rtol, atol, maxiter, m_matrix, m_apply, callback))]
fn krylov_solve(
    py: Python<'_>,
    method: &str,
    a: &NativeCsr,
    b: &NativeArray,
    x0: Option<PyRef<'_, NativeArray>>,
    rtol: f64,
    atol: f64,
    maxiter: Option<usize>,
    m_matrix: Option<PyRef<'_, NativeCsr>>,
    m_apply: Option<Py<PyAny>>,
    callback: Option<Py<PyAny>>,
) -> PyResult<(NativeArray, i64)> {
    let raised = Raised::default();
    let m: Option<SharedPreconditioner> = match (m_matrix, m_apply) {
        (Some(matrix), _) => Some(Arc::new(matrix.inner.clone())),
        (None, Some(apply)) => Some(Arc::new(PyPreconditioner {
            apply,
            raised: raised.clone(),
        })),
        (None, None) => None,
    };
    let options = SolveOptions {
        x0: x0.map(|x0| x0.inner.clone()),
        rtol,
        atol,
        maxiter,
        m,
        check_every: 1,
    };
    let mut monitor = PyCallback {
        callback,
        raised: raised.clone(),
    };
    let (a, b) = (&a.inner, &b.inner);
    let solved = match method {
        "cg" => solve_with::<Cg>(a, b, &options, &mut monitor),
        "bicgstab" => solve_with::<BiCgStab>(a, b, &options, &mut monitor),
        "cgs" => solve_with::<Cgs>(a, b, &options, &mut monitor),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown Krylov method {other:?} (cg, bicgstab or cgs)"
            )))
        }
    };
    let first = raised
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take();
    if let Some(e) = first {
        return Err(e);
    }
    let (x, info) = solved.map_err(sparse_err)?;
    report_fp_errors(py)?;
    Ok((wrap(x), info))
}

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
    m.add_class::<NativeRecording>()?;
    m.add_function(wrap_pyfunction!(start_recording, m)?)?;
    m.add_function(wrap_pyfunction!(finish_recording, m)?)?;
    m.add_function(wrap_pyfunction!(replay_signature, m)?)?;
    m.add_function(wrap_pyfunction!(refuse_replay, m)?)?;
    m.add_function(wrap_pyfunction!(unrecorded, m)?)?;
    m.add_function(wrap_pyfunction!(from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(report_fp_categories, m)?)?;
    m.add_function(wrap_pyfunction!(zeros_, m)?)?;
    m.add_function(wrap_pyfunction!(full_, m)?)?;
    m.add_function(wrap_pyfunction!(arange_, m)?)?;
    m.add_function(wrap_pyfunction!(linspace_, m)?)?;
    m.add_function(wrap_pyfunction!(random_, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(concatenate_, m)?)?;
    m.add_function(wrap_pyfunction!(roll_, m)?)?;
    m.add_function(wrap_pyfunction!(tile_, m)?)?;
    m.add_function(wrap_pyfunction!(flush, m)?)?;
    m.add_function(wrap_pyfunction!(tasks_submitted, m)?)?;
    m.add_function(wrap_pyfunction!(runtime_stats, m)?)?;
    m.add_function(wrap_pyfunction!(shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(krylov_solve, m)?)?;
    Ok(())
}
