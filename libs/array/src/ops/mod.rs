//! Array operations, one module per family.

pub(crate) mod elementwise;
mod linalg;
mod methods;
mod operators;
pub(crate) mod reduce;
