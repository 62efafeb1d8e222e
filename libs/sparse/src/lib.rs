//! `diffuse-sparse`: CSR matrices, SpMV and Krylov building blocks on the diffuse IR, composed
//! with `diffuse-array`.
//!
//! So far: matrices as [`Triplets`] (from Matrix Market files, see [`mtx`], and from the
//! generators in [`generators`]) and their compressed host form [`HostCsr`]. SpMV as index
//! tasks and the solvers come next (issue #7).

#![warn(missing_docs)]

mod csr;
mod error;
pub mod generators;
pub mod mtx;
mod triplets;

pub use csr::{ColumnIndices, HostCsr, IndexWidth};
pub use error::SparseError;
pub use triplets::Triplets;
