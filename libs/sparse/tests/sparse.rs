//! Integration tests of `diffuse-sparse`, one module per area under `tests/sparse/`.

#[path = "sparse/mtx.rs"]
mod mtx;
#[path = "sparse/solvers.rs"]
mod solvers;
#[path = "sparse/spmv.rs"]
mod spmv;
#[path = "sparse/spmv_jit.rs"]
mod spmv_jit;
