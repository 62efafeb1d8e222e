//! Python values to the libraries' and back: dtype and operation names, scalars, shapes and
//! native-endian bytes.

use diffuse_array::{BinaryOp, UnaryOp};
use diffuse_ir::{Complex32, Complex64, DType, Scalar};
use pyo3::exceptions::{PyMemoryError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// The dtype named like NumPy's (`float64`, `float32`, `int64`, `int32`, `bool`,
/// `complex128`, `complex64`).
pub(crate) fn dtype_of(name: &str) -> PyResult<DType> {
    Ok(match name {
        "float64" => DType::F64,
        "float32" => DType::F32,
        "int64" => DType::I64,
        "int32" => DType::I32,
        "bool" => DType::Bool,
        "complex128" => DType::C128,
        "complex64" => DType::C64,
        other => {
            return Err(PyTypeError::new_err(format!(
                "diffuse arrays hold float64, float32, int64, int32, bool, complex128 or \
                 complex64, not {other}"
            )))
        }
    })
}

/// NumPy's name of `dtype`.
pub(crate) fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F64 => "float64",
        DType::F32 => "float32",
        DType::I64 => "int64",
        DType::I32 => "int32",
        DType::Bool => "bool",
        DType::C64 => "complex64",
        DType::C128 => "complex128",
    }
}

pub(crate) fn unary_op(name: &str) -> PyResult<UnaryOp> {
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
        "real" => UnaryOp::Real,
        "imag" => UnaryOp::Imag,
        "conjugate" => UnaryOp::Conj,
        "angle" => UnaryOp::Angle,
        other => return Err(PyValueError::new_err(format!("no native unary op {other}"))),
    })
}

pub(crate) fn binary_op(name: &str) -> PyResult<BinaryOp> {
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
pub(crate) fn scalar_of(value: &Bound<'_, PyAny>, dtype: DType) -> PyResult<Scalar> {
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
        DType::C128 => Scalar::C128(value.extract::<Complex64>()?),
        DType::C64 => {
            let z = value.extract::<Complex64>()?;
            Scalar::C64(Complex32::new(z.re as f32, z.im as f32))
        }
    })
}

pub(crate) fn shape_of(shape: Vec<i64>) -> PyResult<Vec<i64>> {
    if let Some(bad) = shape.iter().find(|&&d| d < 0) {
        return Err(PyValueError::new_err(format!(
            "negative dimensions are not allowed ({bad})"
        )));
    }
    Ok(shape)
}

/// The values of `N`-byte elements in native-endian `bytes`, or a `ValueError` naming `what`
/// when the length is not a whole number of them (`MemoryError` when they do not fit).
pub(crate) fn from_ne<const N: usize, T>(
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
