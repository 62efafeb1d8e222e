//! `diffuse-sparse`: CSR matrices, SpMV and Krylov building blocks on the diffuse IR, composed
//! with `diffuse-array`.
//!
//! So far: matrices as [`Triplets`] (from Matrix Market files, see [`mtx`], and from the
//! generators in [`generators`]), their compressed host form [`HostCsr`], and distributed
//! [`CsrMatrix`]es whose SpMV is an index task whose result is a `diffuse-array` array, with a
//! native kernel and an MLIR generator, so that the JIT fuses SpMV bodies with the vector
//! operations around them. The Krylov solvers built from these live in `examples/`.

#![warn(missing_docs)]

mod alloc;
mod csr;
mod error;
pub mod generators;
mod matrix;
mod mlir;
pub mod mtx;
mod triplets;

pub use csr::{ColumnIndices, HostCsr, IndexWidth};
pub use error::SparseError;
pub use matrix::CsrMatrix;
pub use triplets::Triplets;
