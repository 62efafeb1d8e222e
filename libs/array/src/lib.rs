//! `diffuse-array`: NumPy-like distributed arrays whose operations are index tasks on the
//! diffuse IR. Depends only on `diffuse-ir`: this crate is an example of what a library author
//! writes to get fusion, JIT compilation and placement for free.
//!
//! ```
//! use diffuse_array::{s, ArrayContext, Array};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let cx = ArrayContext::new(diffuse::embedded(Default::default())?);
//! let grid = Array::from_vec(&cx, &[4, 4], (0..16).map(f64::from).collect())?;
//! let center = grid.slice(&s![1..-1, 1..-1])?;
//! let north = grid.slice(&s![..-2, 1..-1])?;
//! let avg = ((&center + &north)? * 0.5)?;
//! center.assign(&avg)?;
//! assert_eq!(grid.sum()?.item::<f64>()?, 120.0 - 4.0 * 2.0);
//! # Ok(()) }
//! ```
//!
//! Every operation submits tasks and returns at once; the result of a reduction is a 0-d array
//! that later operations use directly. Reading values (`to_vec`, `item`) waits.
//!
//! Each operation is its own task kind per dtype (`array.add.f64.aa`, ...), registered on first
//! use with a native kernel. Every element-wise kind also records what it computes
//! ([`ElementwiseKind`]: the operation, dtypes and operand pattern, found with
//! [`elementwise_kind`]), the description the JIT turns into MLIR.

#![warn(missing_docs)]
// Errors wrap `diffuse_ir::IrError`, which carries shapes inline by design.
#![allow(clippy::result_large_err)]

mod array;
mod broadcast;
mod complex;
mod context;
mod creation;
mod element;
mod error;
mod kernels;
mod kinds;
mod mlir;
mod ops;
mod partitioner;
mod slice;

pub use array::Array;
pub use context::ArrayContext;
pub use creation::{arange, full, linspace, ones, random, zeros, Distribution};
pub use diffuse_ir::DType;
pub use element::{Arith, Convert, Float, Num};
pub use error::{ArrayError, ArrayResult};
pub use kernels::Slot;
pub use ops::along::ArgOp;
pub use ops::elementwise::{
    binary, elementwise_kind, unary, where_, BinaryOp, ElementwiseKind, ElementwiseOp, Operand,
    UnaryOp,
};
pub use ops::gather::StridedView;
pub use ops::join::{concatenate, roll, tile};
pub use ops::linalg::{Dense, Orientation, FACTORED, NOT_FACTORED};
pub use partitioner::{blocks_fit, Partitioner};
pub use slice::SliceArg;
