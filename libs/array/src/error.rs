//! Errors of array operations: each names the operation and the shapes or types involved.
//!
//! Shapes are boxed: a `Shape` is a 56-byte inline tuple, and errors travel in every `Result`.

use diffuse_ir::{DType, IrError, Shape};

/// A shape inside an error, boxed so that `Result<_, ArrayError>` stays small.
pub type ErrShape = Box<Shape>;
use thiserror::Error;

/// What went wrong in an array operation.
#[derive(Debug, Error)]
pub enum ArrayError {
    /// Operand shapes that cannot be broadcast together.
    #[error("{op}: shapes {lhs} and {rhs} cannot be broadcast together")]
    ShapeMismatch {
        /// The operation (`"add"`, `"assign"`, ...).
        op: &'static str,
        /// The first operand's shape.
        lhs: ErrShape,
        /// The second operand's shape.
        rhs: ErrShape,
    },
    /// Operands of different element types (convert one with `astype`).
    #[error("{op}: operand dtypes {lhs} and {rhs} differ (convert one with astype)")]
    DTypeMismatch {
        /// The operation.
        op: &'static str,
        /// The first operand's dtype.
        lhs: DType,
        /// The second operand's dtype.
        rhs: DType,
    },
    /// An operation not defined for an element type.
    #[error("{op} is not defined for {dtype} arrays ({expected})")]
    UnsupportedDType {
        /// The operation.
        op: &'static str,
        /// The dtype it was applied to.
        dtype: DType,
        /// What it needs (`"a float dtype"`, ...).
        expected: &'static str,
    },
    /// A scalar operand that does not fit the array's dtype.
    #[error("{op}: scalar {value} cannot be used with a {dtype} array without losing its value")]
    ScalarDType {
        /// The operation.
        op: &'static str,
        /// The scalar, printed.
        value: String,
        /// The array's dtype.
        dtype: DType,
    },
    /// A slice that does not fit the array.
    #[error("slice: {what} (array shape {shape})")]
    BadSlice {
        /// What is wrong, naming the dimension and the index.
        what: String,
        /// The shape of the sliced array.
        shape: ErrShape,
    },
    /// Matrix operands whose shapes do not multiply.
    #[error("{op}: cannot multiply shapes {lhs} and {rhs}: {reason}")]
    MatmulShape {
        /// `"matmul"` or `"matvec"`.
        op: &'static str,
        /// The left operand's shape.
        lhs: ErrShape,
        /// The right operand's shape.
        rhs: ErrShape,
        /// Why not (inner dimensions, ranks).
        reason: String,
    },
    /// A bad argument to an array constructor or method.
    #[error("{op}: {reason}")]
    BadArgument {
        /// The operation.
        op: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// A reduction with no identity applied to an empty array.
    #[error("{op}: an array of shape {shape} has no elements, and {op} has no identity")]
    EmptyReduction {
        /// The reduction.
        op: &'static str,
        /// The empty array's shape.
        shape: ErrShape,
    },
    /// Host data of the wrong length or type.
    #[error("{op}: {reason}")]
    HostData {
        /// The operation.
        op: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// Operands created by different runtimes.
    #[error("{op}: operands belong to different array contexts")]
    ContextMismatch {
        /// The operation.
        op: &'static str,
    },
    /// An error from the IR or the runtime executing the tasks (boxed: it is large).
    #[error(transparent)]
    Ir(Box<IrError>),
}

impl ArrayError {
    /// Nothing when `lhs` and `rhs` are one shape; otherwise `op`'s `ShapeMismatch`.
    pub(crate) fn check_same_shape(
        op: &'static str,
        lhs: Shape,
        rhs: Shape,
    ) -> Result<(), ArrayError> {
        if lhs == rhs {
            return Ok(());
        }
        Err(ArrayError::ShapeMismatch {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        })
    }
}

impl From<IrError> for ArrayError {
    fn from(e: IrError) -> Self {
        ArrayError::Ir(Box::new(e))
    }
}

/// The result of an array operation.
pub type ArrayResult = Result<crate::Array, ArrayError>;
