//! `diffuse-sparse`: CSR matrices, SpMV and Krylov building blocks on the diffuse IR, composed
//! with `diffuse-array`.
//!
//! So far: matrices as [`Triplets`] (from Matrix Market files, see [`mtx`], and from the
//! generators in [`generators`]), their compressed host form [`HostCsr`], and distributed
//! [`CsrMatrix`]es whose SpMV is an index task whose result is a `diffuse-array` array, with a
//! native kernel and an MLIR generator, so that the JIT fuses SpMV bodies with the vector
//! operations around them.
//!
//! On these, [`solvers`]: the Krylov methods of `scipy.sparse.linalg` ([`solvers::Cg`],
//! [`solvers::BiCgStab`], [`solvers::Cgs`]) with SciPy's `x0`, `rtol`, `atol`, `maxiter`,
//! `M`, `callback` and `info`, and geometric multigrid as CG preconditioned by a
//! [`solvers::VCycle`]. The scalars of an iteration stay 0-d arrays, so the only blocking read
//! is the residual check, which may be spaced out so that fusion spans iterations. The
//! example apps and the Python package both run these.

#![warn(missing_docs)]

mod alloc;
mod csr;
mod error;
pub mod generators;
mod matrix;
mod mlir;
pub mod mtx;
pub mod solvers;
mod triplets;

pub use csr::{ColumnIndices, HostCsr, IndexWidth};
pub use error::SparseError;
pub use matrix::CsrMatrix;
pub use triplets::Triplets;
