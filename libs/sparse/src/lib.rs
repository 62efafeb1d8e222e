//! `diffuse-sparse`: CSR matrices, SpMV and Krylov building blocks on the diffuse IR, composed
//! with `diffuse-array`.
//!
//! Empty until the sparse issue (#7) lands.
