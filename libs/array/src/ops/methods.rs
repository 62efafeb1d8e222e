//! The element-wise operations as methods, NumPy-named.

use diffuse_ir::DType;

use crate::array::Array;
use crate::error::{ArrayError, ArrayResult};
use crate::ops::elementwise::{assign, astype, binary, unary, BinaryOp, Operand, UnaryOp};

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:expr;)*) => {
        impl Array {$(
            $(#[$doc])*
            pub fn $name(&self) -> ArrayResult {
                unary($op, self)
            }
        )*}
    };
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:expr;)*) => {
        impl Array {$(
            $(#[$doc])*
            pub fn $name<'a>(&self, other: impl Into<Operand<'a>>) -> ArrayResult {
                binary($op, self, other)
            }
        )*}
    };
}

unary_methods! {
    /// `e^x` element-wise.
    exp => UnaryOp::Exp;
    /// Natural logarithm element-wise.
    log => UnaryOp::Log;
    /// Square root element-wise.
    sqrt => UnaryOp::Sqrt;
    /// Absolute value element-wise.
    abs => UnaryOp::Abs;
    /// The error function element-wise.
    erf => UnaryOp::Erf;
    /// Sine element-wise.
    sin => UnaryOp::Sin;
    /// Cosine element-wise.
    cos => UnaryOp::Cos;
    /// Hyperbolic tangent element-wise.
    tanh => UnaryOp::Tanh;
    /// Logical not of a bool array.
    logical_not => UnaryOp::Not;
    /// A copy into a new store (NumPy's `copy`).
    copy => UnaryOp::Copy;
}

binary_methods! {
    /// `self ^ other` element-wise.
    pow => BinaryOp::Pow;
    /// The larger of the two element-wise (NaN if either is NaN).
    maximum => BinaryOp::Maximum;
    /// The smaller of the two element-wise (NaN if either is NaN).
    minimum => BinaryOp::Minimum;
    /// `self < other` element-wise, as a bool array.
    less => BinaryOp::Less;
    /// `self <= other` element-wise, as a bool array.
    less_equal => BinaryOp::LessEqual;
    /// `self > other` element-wise, as a bool array.
    greater => BinaryOp::Greater;
    /// `self >= other` element-wise, as a bool array.
    greater_equal => BinaryOp::GreaterEqual;
    /// `self == other` element-wise, as a bool array.
    equal => BinaryOp::Equal;
    /// `self != other` element-wise, as a bool array.
    not_equal => BinaryOp::NotEqual;
    /// `self && other` for bool arrays.
    logical_and => BinaryOp::And;
    /// `self || other` for bool arrays.
    logical_or => BinaryOp::Or;
}

impl Array {
    /// Overwrites this array (or view) with `src`, an array broadcast to its shape or a
    /// scalar: NumPy's `self[...] = src`.
    pub fn assign<'a>(&self, src: impl Into<Operand<'a>>) -> Result<(), ArrayError> {
        assign(self, src)
    }

    /// The elements converted to `dtype`, in a new array.
    pub fn astype(&self, dtype: DType) -> ArrayResult {
        astype(self, dtype)
    }
}
