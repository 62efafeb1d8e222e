//! `diffuse-sparse`: CSR matrices, SpMV and Krylov building blocks on the diffuse IR, composed
//! with `diffuse-array`.
//!
//! So far: matrices as [`Triplets`] (from Matrix Market files, see [`mtx`], and from the
//! generators in [`generators`]), their compressed host form [`HostCsr`], and distributed
//! [`CsrMatrix`]es whose SpMV is an index task whose result is a `diffuse-array` array. The
//! SpMV MLIR generator and the solvers come next (issue #7).

#![warn(missing_docs)]

mod csr;
mod error;
pub mod generators;
mod matrix;
pub mod mtx;
mod triplets;

pub use csr::{ColumnIndices, HostCsr, IndexWidth};
pub use error::SparseError;
pub use matrix::CsrMatrix;
pub use triplets::Triplets;
