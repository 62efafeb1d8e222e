//! Array operations, one module per family.

pub(crate) mod along;
pub(crate) mod elementwise;
pub(crate) mod gather;
pub(crate) mod indexed;
pub(crate) mod join;
pub(crate) mod linalg;
mod methods;
mod operators;
pub(crate) mod reduce;
mod scan;
mod select;
mod sort;
