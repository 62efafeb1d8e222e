//! `+ - * /` (and `& |` on bool arrays) between arrays, scalars and not-yet-checked results.
//!
//! Operators return [`ArrayResult`] because operands may not fit together. So that
//! expressions still read like NumPy, a result can stand on the left of the next operator and
//! the error surfaces once, at the end: `(&a + &b + &c)?`. (Rust's orphan rules forbid a
//! result on both sides, or a result with a scalar on the right: add a `?` there.)
//!
//! Scalars on either side are `f64` or `i64` (one float and one integer type, so literals
//! infer without annotations); they are converted to the array's dtype, so `&a_f32 * 2.0`
//! works, and `&a_i64 * 0.5` is an error rather than a silent truncation.

use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Sub};

use crate::array::Array;
use crate::error::ArrayResult;
use crate::ops::elementwise::{binary, unary, BinaryOp, UnaryOp};

macro_rules! array_operators {
    ($trait:ident, $method:ident, $op:expr) => {
        impl $trait<&Array> for &Array {
            type Output = ArrayResult;
            fn $method(self, rhs: &Array) -> ArrayResult {
                binary($op, self, rhs)
            }
        }
        impl $trait<Array> for &Array {
            type Output = ArrayResult;
            fn $method(self, rhs: Array) -> ArrayResult {
                binary($op, self, &rhs)
            }
        }
        impl $trait<&Array> for Array {
            type Output = ArrayResult;
            fn $method(self, rhs: &Array) -> ArrayResult {
                binary($op, &self, rhs)
            }
        }
        impl $trait<Array> for Array {
            type Output = ArrayResult;
            fn $method(self, rhs: Array) -> ArrayResult {
                binary($op, &self, &rhs)
            }
        }
        impl $trait<ArrayResult> for &Array {
            type Output = ArrayResult;
            fn $method(self, rhs: ArrayResult) -> ArrayResult {
                binary($op, self, &rhs?)
            }
        }
        impl $trait<ArrayResult> for Array {
            type Output = ArrayResult;
            fn $method(self, rhs: ArrayResult) -> ArrayResult {
                binary($op, &self, &rhs?)
            }
        }
        impl $trait<&Array> for ArrayResult {
            type Output = ArrayResult;
            fn $method(self, rhs: &Array) -> ArrayResult {
                binary($op, &self?, rhs)
            }
        }
        impl $trait<Array> for ArrayResult {
            type Output = ArrayResult;
            fn $method(self, rhs: Array) -> ArrayResult {
                binary($op, &self?, &rhs)
            }
        }
    };
}

macro_rules! scalar_operators {
    ($trait:ident, $method:ident, $op:expr, $($scalar:ty),*) => {$(
        impl $trait<$scalar> for &Array {
            type Output = ArrayResult;
            fn $method(self, rhs: $scalar) -> ArrayResult {
                binary($op, self, rhs)
            }
        }
        impl $trait<$scalar> for Array {
            type Output = ArrayResult;
            fn $method(self, rhs: $scalar) -> ArrayResult {
                binary($op, &self, rhs)
            }
        }
        impl $trait<&Array> for $scalar {
            type Output = ArrayResult;
            fn $method(self, rhs: &Array) -> ArrayResult {
                binary($op, self, rhs)
            }
        }
        impl $trait<Array> for $scalar {
            type Output = ArrayResult;
            fn $method(self, rhs: Array) -> ArrayResult {
                binary($op, self, &rhs)
            }
        }
    )*};
}

array_operators!(Add, add, BinaryOp::Add);
array_operators!(Sub, sub, BinaryOp::Sub);
array_operators!(Mul, mul, BinaryOp::Mul);
array_operators!(Div, div, BinaryOp::Div);
array_operators!(BitAnd, bitand, BinaryOp::And);
array_operators!(BitOr, bitor, BinaryOp::Or);
scalar_operators!(Add, add, BinaryOp::Add, f64, i64);
scalar_operators!(Sub, sub, BinaryOp::Sub, f64, i64);
scalar_operators!(Mul, mul, BinaryOp::Mul, f64, i64);
scalar_operators!(Div, div, BinaryOp::Div, f64, i64);

impl Neg for &Array {
    type Output = ArrayResult;
    fn neg(self) -> ArrayResult {
        unary(UnaryOp::Neg, self)
    }
}

impl Neg for Array {
    type Output = ArrayResult;
    fn neg(self) -> ArrayResult {
        unary(UnaryOp::Neg, &self)
    }
}
